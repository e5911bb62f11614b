import type { Config } from '../infra/config.js';
import { createDb, type Db } from '../infra/db.js';
import { checkDependencies } from '../infra/dependencies.js';
import { closeRedis, createRedis, type RedisClient } from '../infra/redis.js';

/**
 * The commands' bounds: a silent or unreachable Redis or MySQL ends a command within seconds
 * with exit code 3 and a message naming it and its address (run-cli.ts), while a long but
 * healthy step (a migration, a big reconcile query) is not cut short by the app's request-sized bounds.
 */
export const CLI_TIMEOUTS = {
  /** Connecting, and the first PING / SELECT 1 that proves the dependency answers. */
  connectMs: 5_000,
  redisCommandMs: 10_000,
  mysqlQueryMs: 120_000,
};

/** A pool whose dependency has answered a SELECT 1; throws DependencyUnavailable (address, no password) otherwise. */
export async function openDb(config: Config, poolSize: number): Promise<Db> {
  const db = createDb({
    mysqlUrl: config.mysqlUrl,
    poolSize,
    timeouts: {
      queryMs: Math.max(config.deadlines.mysqlQueryMs, CLI_TIMEOUTS.mysqlQueryMs),
      connectMs: Math.max(config.deadlines.mysqlConnectMs, CLI_TIMEOUTS.connectMs),
    },
  });
  const [problem] = await checkDependencies(config, { db }, CLI_TIMEOUTS.connectMs);
  if (problem) {
    void db.destroy().catch(() => undefined);
    throw problem;
  }
  return db;
}

/** A client whose Redis has answered a PING; throws DependencyUnavailable otherwise. */
export async function openRedis(config: Config): Promise<RedisClient> {
  const redis = createRedis(
    { ...config, deadlines: { ...config.deadlines, redisCommandMs: Math.max(config.deadlines.redisCommandMs, CLI_TIMEOUTS.redisCommandMs) } },
    { onError: () => undefined }, // a failing command says it, with the address (run-cli.ts)
  );
  const [problem] = await checkDependencies(config, { redis }, CLI_TIMEOUTS.connectMs);
  if (problem) {
    redis.disconnect();
    throw problem;
  }
  return redis;
}

/** Closes what was opened; a dependency gone silent meanwhile cannot hold the command up. */
export async function closeAll(redis: RedisClient | undefined, db: Db | undefined): Promise<void> {
  const bounded = (work: Promise<unknown>): Promise<unknown> =>
    Promise.race([work.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, CLI_TIMEOUTS.connectMs).unref())]);
  await Promise.all([redis ? bounded(closeRedis(redis)) : undefined, db ? bounded(db.destroy()) : undefined]);
}
