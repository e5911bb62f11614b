import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { createConnection, type Connection } from 'mysql2/promise';
import { runFixture, type Fixture } from '../../kit/children.js';
import { startBinlogMariadb, type BinlogMariadb } from '../../kit/mariadb-binlog.js';
import { testRedisUrl } from '../../kit/services.js';
import { loadConfig, type Config } from '../../src/infra/config.js';
import { createDb, type Db } from '../../src/infra/db.js';
import { closeRedis, createRedis, type RedisClient } from '../../src/infra/redis.js';
import { loadDemoData } from '../../src/infra/seed/load-demo-data.js';
import { buildTestApp, TEST_METRICS_TOKEN } from './test-env.js';
import { deleteKeys } from './redis.js';

const CDC_CLI = new URL('../../src/cli/cdc.ts', import.meta.url);

/**
 * A world of the change follower's own: a private MariaDB writing a ROW binlog (kit), the demo
 * data in its database, an app on it and on the shared Redis under a key prefix of this world's.
 */
export interface CdcWorld {
  mariadb: BinlogMariadb;
  config: Config;
  db: Db;
  redis: RedisClient;
  keyPrefix: string;
  app: FastifyInstance;
  /** A plain connection to the followed database, for writes that bypass the app. */
  sql: Connection;
  /** The environment of a follower process on this world. */
  env: Record<string, string>;
  /** `npm run cdc` as a child process. */
  startFollower(args?: string[]): Fixture;
  close(): Promise<void>;
}

export async function startCdcWorld(): Promise<CdcWorld> {
  const mariadb = await startBinlogMariadb();
  const keyPrefix = `test:cdc-${randomBytes(4).toString('hex')}:`;
  const env = {
    NODE_ENV: 'test',
    MYSQL_URL: mariadb.mysqlUrl,
    REDIS_URL: testRedisUrl(),
    REDIS_KEY_PREFIX: keyPrefix,
    METRICS_TOKEN: TEST_METRICS_TOKEN,
    LOG_LEVEL: 'info',
    DEFAULT_LANGUAGE: 'en',
    SECKILL_WORKER: 'false',
    MYSQL_POOL_SIZE: '5',
  };
  const config = loadConfig(env);
  const db = createDb({ mysqlUrl: mariadb.mysqlUrl, poolSize: 5 });
  await loadDemoData(db);
  const redis = createRedis(config);
  const { app } = await buildTestApp({ name: 'cdc', config, db, redis, keyPrefix, mysqlUrl: mariadb.mysqlUrl, cleanup: async () => undefined });
  const sql = await createConnection(mariadb.mysqlUrl);
  const followers: Fixture[] = [];
  return {
    mariadb,
    config,
    db,
    redis,
    keyPrefix,
    app,
    sql,
    env,
    startFollower(args = []) {
      const follower = runFixture(CDC_CLI, args, env);
      followers.push(follower);
      return follower;
    },
    async close() {
      for (const follower of followers) {
        follower.child.kill('SIGCONT');
        follower.child.kill('SIGKILL');
      }
      await step('app', () => app.close());
      await step('connections', () => Promise.all([sql.end(), closeRedis(redis), db.destroy()]));
      await step('keys', () => deleteKeys(keyPrefix));
      await step('mariadb', () => mariadb.stop());
    },
  };
}

/** One step of a cleanup, named on stderr when it is slow (a busy machine, a silent dependency). */
async function step(name: string, work: () => Promise<unknown>): Promise<void> {
  const started = performance.now();
  const slow = setTimeout(() => console.warn(`cdc world: closing ${name} still runs after 5 s`), 5_000);
  // Bounded: the next steps (the private MariaDB's stop above all) run whatever this one does.
  const bound = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), STEP_BOUND_MS).unref());
  try {
    const outcome = await Promise.race([work().then(() => 'done' as const), bound]);
    if (outcome === 'timeout') console.warn(`cdc world: closing ${name} gave up after ${STEP_BOUND_MS} ms`);
  } finally {
    clearTimeout(slow);
  }
  const tookMs = performance.now() - started;
  if (tookMs > 5_000) console.warn(`cdc world: closing ${name} took ${Math.round(tookMs)} ms`);
}

const STEP_BOUND_MS = 20_000;

/** The shop as the app answers it (GET /api/shop/{id}). */
export async function shopThroughApp(app: FastifyInstance, id: string): Promise<{ name: string; typeId: string; x: number; y: number } | null> {
  const response = await app.inject({ url: `/api/shop/${id}` });
  return response.statusCode === 200 ? response.json().data : null;
}

/** The position a follower saved (`cdc:follower:position`), or undefined. */
export async function savedPosition(redis: RedisClient): Promise<{ file: string; position: number; token: bigint } | undefined> {
  const saved = await redis.hgetall('cdc:follower:position');
  return saved.file === undefined ? undefined : { file: saved.file, position: Number(saved.position), token: BigInt(saved.token!) };
}

/** Orders binlog positions: negative when a is before b. */
export function comparePositions(a: { file: string; position: number }, b: { file: string; position: number }): number {
  return a.file === b.file ? a.position - b.position : a.file < b.file ? -1 : 1;
}

/** Polls `check` every 2 ms (finer than eventually's 50 ms) and returns the ms from `since` until it held; fails after 10 s. */
export async function msUntil(check: () => Promise<boolean>, since: number): Promise<number> {
  while (!(await check())) {
    if (performance.now() - since > 10_000) throw new Error('not visible within 10 s');
    await sleep(2);
  }
  return performance.now() - since;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** p50, p99 and the slowest of a run's commit-to-visible times, rounded to the ms, as the tests print them. */
export function visibleFigures(ms: readonly number[]): string {
  const sorted = [...ms].sort((a, b) => a - b);
  return JSON.stringify({ p50: Math.round(percentile(sorted, 50)), p99: Math.round(percentile(sorted, 99)), max: Math.round(sorted[sorted.length - 1]!) });
}
