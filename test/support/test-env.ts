import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { createConnection } from 'mysql2/promise';
import { buildApp } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/infra/config.js';
import { createDb, type Db } from '../../src/infra/db.js';
import { ensureDatabase, migrateToLatest } from '../../src/infra/migrate.js';
import { closeRedis, createRedis, type RedisClient } from '../../src/infra/redis.js';
import type { SmsSender } from '../../src/modules/user/sms-sender.js';
import { testMysqlUrl, testRedisUrl } from './env.js';

/**
 * A private world for one test file: its own MariaDB database (migrated) and its own Redis
 * key prefix, both removed by `cleanup()`. Files can therefore run in parallel against the
 * one real Redis and MariaDB.
 */
export interface TestEnv {
  name: string;
  config: Config;
  db: Db;
  /** Redis client whose keys all carry this env's prefix. */
  redis: RedisClient;
  keyPrefix: string;
  mysqlUrl: string;
  cleanup(): Promise<void>;
}

export async function createTestEnv(env: Record<string, string> = {}): Promise<TestEnv> {
  const name = `hmdp_test_${randomBytes(4).toString('hex')}`;
  const keyPrefix = `test:${name}:`;
  const mysqlUrl = `${testMysqlUrl().replace(/\/$/, '')}/${name}`;
  const config = loadConfig({
    NODE_ENV: 'test',
    MYSQL_URL: mysqlUrl,
    REDIS_URL: testRedisUrl(),
    REDIS_KEY_PREFIX: keyPrefix,
    MYSQL_POOL_SIZE: '5',
    ...env,
  });
  await ensureDatabase(mysqlUrl);
  const db = createDb({ mysqlUrl, poolSize: config.mysqlPoolSize });
  await migrateToLatest(db);
  const redis = createRedis(config);

  const cleanup = async (): Promise<void> => {
    await deleteKeys(keyPrefix);
    await closeRedis(redis);
    await db.destroy();
    await dropDatabase(name);
  };
  return { name, config, db, redis, keyPrefix, mysqlUrl, cleanup };
}

/** Removes every key under a prefix (SCAN, never KEYS or FLUSHDB: other tests share this Redis). */
export async function deleteKeys(prefix: string): Promise<void> {
  const raw = new Redis(testRedisUrl());
  try {
    let cursor = '0';
    do {
      const [next, keys] = await raw.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await raw.unlink(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    raw.disconnect();
  }
}

async function dropDatabase(name: string): Promise<void> {
  const connection = await createConnection(testMysqlUrl());
  try {
    await connection.query(`DROP DATABASE IF EXISTS \`${name}\``);
  } finally {
    await connection.end();
  }
}

/** An SmsSender that keeps the codes, so a test can log in like a user reading a text. */
export class InboxSmsSender implements SmsSender {
  readonly sent: Array<{ phone: string; code: string }> = [];

  async sendLoginCode(phone: string, code: string): Promise<void> {
    this.sent.push({ phone, code });
  }

  lastCodeFor(phone: string): string {
    const message = this.sent.findLast((entry) => entry.phone === phone);
    if (!message) throw new Error(`no code was sent to ${phone}`);
    return message.code;
  }
}

export async function buildTestApp(testEnv: TestEnv, sms = new InboxSmsSender()): Promise<{ app: FastifyInstance; sms: InboxSmsSender }> {
  const app = await buildApp({ config: testEnv.config, redis: testEnv.redis, db: testEnv.db, sms, logger: false });
  await app.ready();
  return { app, sms };
}
