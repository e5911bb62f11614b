import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { createConnection } from 'mysql2/promise';
import { buildApp, type AppDeps } from '../../src/app.js';
import { UserRepository } from '../../src/modules/users/user-repository.js';
import { RoleService } from '../../src/modules/users/roles.js';
import { SessionStore } from '../../src/modules/users/session-store.js';
import { loadConfig, type Config } from '../../src/infra/config.js';
import { createDb, type Db } from '../../src/infra/db.js';
import { ensureDatabase, migrateToLatest } from '../../src/infra/migrate.js';
import { closeRedis, createRedis, type RedisClient } from '../../src/infra/redis.js';
import type { SmsSender } from '../../src/modules/users/sms-sender.js';
import type { UserRole } from '../../src/infra/schema.js';
import { testMysqlUrl, testRedisUrl } from '../../kit/services.js';
import { testAppLogger } from './app-logs.js';
import { deleteKeys } from './redis.js';

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

export const TEST_METRICS_TOKEN = 'test-metrics-token-0123456789';
/** Headers of a Prometheus scrape of a test app's `GET /metrics`. */
export const metricsAuth = { authorization: `Bearer ${TEST_METRICS_TOKEN}` } as const;

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
    // A line per request in the run's app logs, which the global setup scans for phones and tokens in clear.
    LOG_REQUESTS: 'all',
    // Background jobs only where a test asks for them.
    SECKILL_WORKER: 'false',
    // Order rate limits only where a test asks for them: many tests fire bursts of orders from
    // one user or one address on purpose (test/integration/http/rate-limits.test.ts covers the limits).
    ORDER_RATE_LIMIT_PER_USER: '0',
    ORDER_RATE_LIMIT_PER_IP: '0',
    SECKILL_ADMISSION_RATE: '0',
    // Per-user write limits and upload quotas likewise (abuse/write-limits.test.ts and
    // abuse/uploads.test.ts turn them on); no background sweep of uploads.
    WRITE_LIMIT_BLOGS_PER_HOUR: '0',
    WRITE_LIMIT_LIKES_PER_MINUTE: '0',
    WRITE_LIMIT_FOLLOWS_PER_MINUTE: '0',
    UPLOAD_FILES_PER_HOUR: '0',
    UPLOAD_BYTES_PER_DAY: '0',
    UPLOAD_SWEEP_INTERVAL_SECONDS: '0',
    // Bursts of thousands of in-process requests queue for seconds on a busy 2-core machine: the
    // request deadline and its Redis / MySQL bounds only where a test asks for them
    // (test/integration/http/deadlines.test.ts).
    REQUEST_DEADLINE_MS: '60000',
    // Uploaded images in a folder of this env's own, removed by cleanup().
    UPLOAD_DIR: join(tmpdir(), name, 'uploads'),
    // /metrics exists only with a token: scrape it with `metricsAuth`.
    METRICS_TOKEN: TEST_METRICS_TOKEN,
    // Messages in English unless a request asks otherwise (Accept-Language), so that assertions
    // read the English texts; test/integration/http/languages.test.ts covers Chinese and the zh default.
    DEFAULT_LANGUAGE: 'en',
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
    await rm(join(tmpdir(), name), { recursive: true, force: true });
  };
  return { name, config, db, redis, keyPrefix, mysqlUrl, cleanup };
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

export async function buildTestApp(
  testEnv: TestEnv,
  sms = new InboxSmsSender(),
  extra: Partial<AppDeps> = {},
): Promise<{ app: FastifyInstance; sms: InboxSmsSender }> {
  // Logs go to the run's log folder, which the global setup scans for phones and tokens in clear.
  const app = await buildApp({ config: testEnv.config, redis: testEnv.redis, db: testEnv.db, sms, logger: testAppLogger(), ...extra });
  await app.ready();
  return { app, sms };
}

/**
 * Users with open sessions, made directly in MySQL and Redis (the HTTP login is tested on its
 * own): returns their ids and `authorization` tokens, in order.
 */
export async function createUsersWithSessions(testEnv: TestEnv, count: number, firstPhone = 15_000_000_000): Promise<Array<{ id: string; token: string }>> {
  const phones = Array.from({ length: count }, (_, i) => String(firstPhone + i));
  for (let i = 0; i < phones.length; i += 500) {
    const values = phones.slice(i, i + 500).map((phone) => ({ phone, nick_name: `u${phone.slice(-6)}` }));
    await testEnv.db.insertInto('tb_user').values(values).execute();
  }
  const rows = await testEnv.db.selectFrom('tb_user').select(['id', 'phone', 'nick_name']).where('phone', 'in', phones).execute();
  const byPhone = new Map(rows.map((row) => [row.phone, row]));
  const sessions = new SessionStore(testEnv.redis, testEnv.config.auth.sessionTtlSeconds, testEnv.config.auth.sessionMaxAgeSeconds);
  return Promise.all(
    phones.map(async (phone) => {
      const row = byPhone.get(phone)!;
      return { id: row.id, token: await sessions.create({ id: row.id, nickName: row.nick_name, icon: '', role: 'user' }) };
    }),
  );
}

/**
 * An `authorization` header for a user id, with the session a login of a user of that role opens
 * (admin routes read the role from the session; granting it is tested in roles.test.ts).
 */
export async function sessionOf(testEnv: TestEnv, userId: string, role: UserRole = 'user'): Promise<{ authorization: string }> {
  const sessions = new SessionStore(testEnv.redis, testEnv.config.auth.sessionTtlSeconds, testEnv.config.auth.sessionMaxAgeSeconds);
  return { authorization: await sessions.create({ id: userId, nickName: `user ${userId}`, icon: '', role }) };
}

/** The role service of `npm run admin`, on the env's database and Redis. */
export function roleService(testEnv: TestEnv): RoleService {
  return new RoleService({
    users: new UserRepository(testEnv.db),
    sessions: new SessionStore(testEnv.redis, testEnv.config.auth.sessionTtlSeconds, testEnv.config.auth.sessionMaxAgeSeconds),
  });
}

/** Makes the user with this phone an administrator, as `npm run admin -- grant <phone>` does (live sessions included). */
export async function grantAdmin(testEnv: TestEnv, phone: string): Promise<void> {
  await roleService(testEnv).grant(phone);
}
