import closeWithGrace from 'close-with-grace';
import type { FastifyBaseLogger } from 'fastify';
import { buildApp } from './app.js';
import { ConfigError, loadConfig, type Config } from './infra/config.js';
import { createDb } from './infra/db.js';
import { checkDependencies } from './infra/dependencies.js';
import { closeRedis, createRedis } from './infra/redis.js';

/**
 * Starts one stateless app instance: HTTP server on PORT, connections from config.
 *
 * A silent or unreachable Redis or MySQL does not stop the start (a crash loop under a supervisor
 * helps no one): every wait is bounded (config.deadlines), the server listens degraded
 * (/api/health 503 naming the dependency, requests that need it 503 + Retry-After) and serves
 * fully as soon as the dependency answers, with no restart. The log names the dependency and its
 * address (without password).
 */
async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const errorLog: { to?: FastifyBaseLogger } = {}; // the app's logger, once it exists
  // ioredis reconnects by itself; say so in our log (rate-limited) instead of its "Unhandled error event".
  const redis = createRedis(config, {
    onError: (err, skipped) => {
      if (errorLog.to) errorLog.to.warn({ err, skipped }, 'redis connection error');
      else console.error(`redis connection error: ${err.message}`);
    },
  });
  const db = createDb({
    mysqlUrl: config.mysqlUrl,
    poolSize: config.mysqlPoolSize,
    timeouts: { queryMs: config.deadlines.mysqlQueryMs, connectMs: config.deadlines.mysqlConnectMs },
  });
  // buildApp refuses some settings only known to be wrong together (SMS_SENDER in production).
  const app = await buildApp({ config, redis, db }).catch(exitOnConfigError);
  const log = app.log;
  errorLog.to = log;

  // SIGTERM/SIGINT: stop accepting, let in-flight requests finish, then close the pools.
  closeWithGrace({ delay: 10_000, logger: log }, async ({ signal, err }) => {
    if (err) log.error({ err }, 'shutting down after an uncaught error');
    else log.info(signal ? `${signal} received, shutting down` : 'shutting down');
    await app.close(); // stops the order worker and canceller too
    await db.destroy();
    await closeRedis(redis);
  });

  await app.listen({ host: config.host, port: config.port });
  for (const problem of await checkDependencies(config, { redis, db }, config.deadlines.requestMs)) {
    log.warn({ dependency: problem.dependency }, `${problem.message}; serving degraded (503 where it is needed) until it answers`);
  }
}

function loadConfigOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    return exitOnConfigError(error);
  }
}

function exitOnConfigError(error: unknown): never {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(1);
  }
  throw error;
}

await main();
