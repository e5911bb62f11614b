/**
 * The benchmark's own corner of the shared Redis and MariaDB: a database `hmdp_bench_<pid>` and a
 * key prefix of the same name, with users and their sessions; removed by `destroy()`.
 */
import { createConnection } from 'mysql2/promise';
import { Redis } from 'ioredis';
import { createDb, type Db } from '../src/infra/db.js';
import { ensureDatabase, migrateToLatest } from '../src/infra/migrate.js';
import { closeRedis, createRedis, deleteKeysWithPrefix, type RedisClient } from '../src/infra/redis.js';
import { SessionStore } from '../src/modules/user/session-store.js';

export interface BenchUser {
  id: string;
  token: string;
}

export interface World {
  name: string;
  db: Db;
  /** Client with the run's key prefix, like the servers'. */
  redis: RedisClient;
  keyPrefix: string;
  mysqlUrl: string;
  redisUrl: string;
  /** Buyers, in order; the first one is also the admin that creates vouchers. */
  users: BenchUser[];
  admin: BenchUser;
  shopId: string;
  /** Environment every server and worker process of the run gets. */
  env: Record<string, string>;
  destroy(): Promise<void>;
}

const FIRST_PHONE = 16_000_000_000;
const SESSION_TTL_SECONDS = 6 * 3600;

export async function createWorld(options: { redisUrl: string; mysqlServerUrl: string; users: number }): Promise<World> {
  const name = `hmdp_bench_${process.pid}`;
  const keyPrefix = `${name}:`;
  const mysqlUrl = `${options.mysqlServerUrl}/${name}`;
  await ensureDatabase(mysqlUrl);
  const db = createDb({ mysqlUrl, poolSize: 5 });
  const redis = createRedis({ redisUrl: options.redisUrl, redisClusterNodes: [], redisKeyPrefix: keyPrefix });

  const destroy = async () => {
    await db.destroy();
    await closeRedis(redis);
    const raw = new Redis(options.redisUrl);
    await deleteKeysWithPrefix(raw, keyPrefix).finally(() => raw.disconnect());
    const connection = await createConnection(options.mysqlServerUrl);
    await connection.query(`DROP DATABASE IF EXISTS \`${name}\``).finally(() => connection.end());
  };

  try {
    await migrateToLatest(db);
    const shopId = await createShop(db);
    const users = await createUsers(db, redis, options.users);
    const admin = users[0]!;
    const env = {
      MYSQL_URL: mysqlUrl,
      REDIS_URL: options.redisUrl,
      REDIS_KEY_PREFIX: keyPrefix,
      ADMIN_USER_IDS: admin.id,
      SESSION_TTL_SECONDS: String(SESSION_TTL_SECONDS),
      MYSQL_POOL_SIZE: '20',
    };
    return { name, db, redis, keyPrefix, mysqlUrl, redisUrl: options.redisUrl, users, admin, shopId, env, destroy };
  } catch (error) {
    await destroy();
    throw error;
  }
}

async function createShop(db: Db): Promise<string> {
  await db.insertInto('tb_shop_type').values({ id: '1', name: 'Food', icon: '', sort: 1 }).execute();
  const result = await db
    .insertInto('tb_shop')
    .values({
      name: 'Benchmark Noodle House',
      type_id: '1',
      images: 'https://example.com/a.jpg,https://example.com/b.jpg',
      area: 'West Lake',
      address: '1 Benchmark Road, Hangzhou',
      x: 120.149993,
      y: 30.334229,
      avg_price: '80',
      sold: 4215,
      comments: 3035,
      score: 37,
      open_hours: '10:00-22:00',
    })
    .executeTakeFirstOrThrow();
  return String(result.insertId);
}

/** `count` users, made in bulk in MySQL, each with an open session in Redis. */
async function createUsers(db: Db, redis: RedisClient, count: number): Promise<BenchUser[]> {
  for (let i = 0; i < count; i += 1000) {
    const rows = Array.from({ length: Math.min(1000, count - i) }, (_, j) => ({ phone: String(FIRST_PHONE + i + j), nick_name: `bench${i + j}` }));
    await db.insertInto('tb_user').values(rows).execute();
  }
  const rows = await db.selectFrom('tb_user').select(['id', 'nick_name']).orderBy('id').execute();
  const sessions = new SessionStore(redis, SESSION_TTL_SECONDS);
  return Promise.all(rows.map(async (row) => ({ id: row.id, token: await sessions.create({ id: row.id, nickName: row.nick_name, icon: '' }) })));
}
