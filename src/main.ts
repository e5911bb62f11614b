import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { ConfigError, loadConfig, type Config } from './infra/config.js';
import { createDb } from './infra/db.js';
import { closeRedis, createRedis } from './infra/redis.js';

/** Starts one stateless app instance: HTTP server on PORT, connections from config. */
async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const redis = createRedis(config);
  const db = createDb({ mysqlUrl: config.mysqlUrl, poolSize: config.mysqlPoolSize });
  // buildApp refuses some settings only known to be wrong together (SMS_SENDER in production).
  const app = await buildApp({ config, redis, db }).catch(exitOnConfigError);
  // ioredis reconnects by itself; say so in our log instead of its "Unhandled error event".
  redis.on('error', (err: Error) => app.log.warn({ err }, 'redis connection error'));

  // SIGTERM/SIGINT: stop accepting, let in-flight requests finish, then close the pools.
  closeWithGrace({ delay: 10_000, logger: app.log }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'shutting down after an uncaught error');
    else app.log.info(signal ? `${signal} received, shutting down` : 'shutting down');
    await app.close(); // stops the order worker and canceller too
    await db.destroy();
    await closeRedis(redis);
  });

  await app.listen({ host: config.host, port: config.port });
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
