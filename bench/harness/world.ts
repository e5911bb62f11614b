/**
 * Where a run's data lives, with users and their sessions, a shop and the vouchers it creates.
 *
 * - Own world (the default): a database `hmdp_bench_<pid>` and a key prefix of the same name on
 *   the local Redis and MariaDB, for the servers the harness starts; dropped by `destroy()`.
 * - Attached world (`--target URL`): the database and Redis (standalone or Cluster, with its key
 *   prefix) of servers running elsewhere, read from the same environment variables the servers
 *   take (MYSQL_URL, REDIS_URL / REDIS_CLUSTER_NODES, REDIS_KEY_PREFIX, SECKILL_STREAM_SHARDS).
 *   `destroy()` then removes exactly what the run created and nothing else.
 */
import { randomBytes } from 'node:crypto';
import { createConnection } from 'mysql2/promise';
import { Redis } from 'ioredis';
import type { Config } from '../../src/infra/config.js';
import { createDb, type Db } from '../../src/infra/db.js';
import { ensureDatabase, migrateToLatest } from '../../src/infra/migrate.js';
import { closeRedis, createRedis, deleteKeysWithPrefix, type RedisClient } from '../../src/infra/redis.js';
import { buildSale, OrderStream, type Sale, SaleKeys } from '../../src/modules/seckill/index.js';
import { SessionStore } from '../../src/modules/users/index.js';

export interface BenchUser {
  id: string;
  token: string;
}

export interface World {
  db: Db;
  /** Client with the servers' key prefix. */
  redis: RedisClient;
  /** Buyers, in order. */
  users: BenchUser[];
  shopId: string;
  /** The Redis side of sales, with the servers' stream shards (SECKILL_STREAM_SHARDS). */
  sale: Sale;
  /** The order streams of those shards. */
  stream: OrderStream;
  /** Every voucher the run created. */
  vouchers: readonly string[];
  /** Environment of the server processes the harness starts (own world only). */
  env: Record<string, string>;
  /** Seckill vouchers open for the next hours, published to Redis as the voucher service does. */
  createVouchers(count: number, stock: number): Promise<string[]>;
  destroy(): Promise<void>;
}

/** Bench users' phone numbers start here (a range real mainland numbers do not use). */
const FIRST_PHONE = 16_000_000_000;
const SESSION_TTL_SECONDS = 6 * 3600;
const OWN_SHARDS = 4;
const VOUCHERS_PER_INSERT = 500;
const PUBLISHES_AT_ONCE = 50;

export interface OwnWorldOptions {
  redisUrl: string;
  /** A Redis Cluster instead of `redisUrl` (a throw-away one: its keys are not deleted, the cluster goes). */
  redisClusterNodes?: string[];
  mysqlServerUrl: string;
  users: number;
  /** Database and key prefix name; default `hmdp_bench_<pid>`. */
  name?: string;
  /** The servers' LOG_LEVEL (default: startServer's `warn`). */
  logLevel?: string;
}

export async function createOwnWorld(options: OwnWorldOptions): Promise<World> {
  const name = options.name ?? `hmdp_bench_${process.pid}`;
  const keyPrefix = `${name}:`;
  const mysqlUrl = `${options.mysqlServerUrl}/${name}`;
  const redisClusterNodes = options.redisClusterNodes ?? [];
  await ensureDatabase(mysqlUrl);
  const db = createDb({ mysqlUrl, poolSize: 5 });
  const redis = createRedis({ redisUrl: options.redisUrl, redisClusterNodes, redisKeyPrefix: keyPrefix });
  const destroy = async () => {
    await db.destroy();
    await closeRedis(redis);
    if (redisClusterNodes.length === 0) {
      const raw = new Redis(options.redisUrl);
      await deleteKeysWithPrefix(raw, keyPrefix).finally(() => raw.disconnect());
    }
    const connection = await createConnection(options.mysqlServerUrl);
    await connection.query(`DROP DATABASE IF EXISTS \`${name}\``).finally(() => connection.end());
  };
  try {
    await migrateToLatest(db);
    const env = {
      MYSQL_URL: mysqlUrl,
      REDIS_URL: options.redisUrl,
      ...(redisClusterNodes.length > 0 ? { REDIS_CLUSTER_NODES: redisClusterNodes.join(',') } : {}),
      REDIS_KEY_PREFIX: keyPrefix,
      SESSION_TTL_SECONDS: String(SESSION_TTL_SECONDS),
      SECKILL_STREAM_SHARDS: String(OWN_SHARDS),
      MYSQL_POOL_SIZE: '20',
      // The whole load comes from this one address: keep the per-IP order limit on (its cost is
      // part of the measurement) but far above the offered rate, unless the caller set it.
      ORDER_RATE_LIMIT_PER_IP: process.env.ORDER_RATE_LIMIT_PER_IP ?? '1000000',
      ...(options.logLevel === undefined ? {} : { LOG_LEVEL: options.logLevel }),
    };
    return await populate(db, redis, OWN_SHARDS, options.users, env, destroy);
  } catch (error) {
    await destroy();
    throw error;
  }
}

export async function attachWorld(config: Config, users: number): Promise<World> {
  const db = createDb({ mysqlUrl: config.mysqlUrl, poolSize: 5 });
  const redis = createRedis(config);
  let world: World | undefined;
  const close = async () => {
    await db.destroy();
    await closeRedis(redis);
  };
  const destroy = async () => {
    try {
      if (world) await removeWhatWasCreated(world);
    } finally {
      await close();
    }
  };
  try {
    world = await populate(db, redis, config.seckill.streamShards, users, {}, destroy);
    return world;
  } catch (error) {
    await destroy();
    throw error;
  }
}

async function populate(
  db: Db,
  redis: RedisClient,
  shards: number,
  userCount: number,
  env: Record<string, string>,
  destroy: () => Promise<void>,
): Promise<World> {
  const shopId = await createShop(db);
  const users = await createUsers(db, redis, userCount);
  const keys = new SaleKeys(shards);
  const sale = buildSale(redis, keys);
  const vouchers: string[] = [];
  return {
    db,
    redis,
    users,
    shopId,
    sale,
    stream: new OrderStream(redis, keys),
    vouchers,
    env,
    createVouchers: async (count, stock) => {
      const created = await createVouchers(db, sale, shopId, count, stock);
      vouchers.push(...created);
      return created;
    },
    destroy,
  };
}

/** A shared database keeps only what it had: the run's orders, vouchers, shop, users and sessions go. */
async function removeWhatWasCreated(world: World): Promise<void> {
  const { vouchers, sale } = world;
  for (let i = 0; i < vouchers.length; i += 500) {
    const chunk = vouchers.slice(i, i + 500);
    await world.db.deleteFrom('tb_voucher_order').where('voucher_id', 'in', chunk).execute();
    await world.db.deleteFrom('tb_seckill_voucher').where('voucher_id', 'in', chunk).execute();
    await world.db.deleteFrom('tb_voucher').where('id', 'in', chunk).execute();
    for (const voucherId of chunk) {
      const keys = sale.keys.voucher(voucherId);
      await world.redis.del(keys.voucher, keys.buyers);
    }
  }
  await world.db.deleteFrom('tb_shop').where('id', '=', world.shopId).execute();
  const sessions = new SessionStore(world.redis, SESSION_TTL_SECONDS);
  for (const user of world.users) await sessions.delete(user.token, user.id);
  await world.db
    .deleteFrom('tb_user')
    .where('phone', '>=', String(FIRST_PHONE))
    .where('phone', '<', String(FIRST_PHONE + world.users.length))
    .execute();
}

async function createShop(db: Db): Promise<string> {
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

/** `count` users (made in bulk, or found from an earlier run), each with a new session. */
async function createUsers(db: Db, redis: RedisClient, count: number): Promise<BenchUser[]> {
  for (let i = 0; i < count; i += 1000) {
    const rows = Array.from({ length: Math.min(1000, count - i) }, (_, j) => ({ phone: String(FIRST_PHONE + i + j), nick_name: `bench${i + j}` }));
    await db.insertInto('tb_user').ignore().values(rows).execute();
  }
  const rows = await db
    .selectFrom('tb_user')
    .select(['id', 'nick_name'])
    .where('phone', '>=', String(FIRST_PHONE))
    .where('phone', '<', String(FIRST_PHONE + count))
    .orderBy('phone')
    .execute();
  const sessions = new SessionStore(redis, SESSION_TTL_SECONDS);
  return Promise.all(rows.map(async (row) => ({ id: row.id, token: await sessions.create({ id: row.id, nickName: row.nick_name, icon: '', role: 'user' }) })));
}

/**
 * `count` vouchers on sale from a minute ago for six hours, made in bulk (a sale of the smoke run
 * alone plans for hundreds: one transaction and one publish at a time cost seconds of its setup).
 */
async function createVouchers(db: Db, sale: Sale, shopId: string, count: number, stock: number): Promise<string[]> {
  const begin = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000);
  const end = new Date(begin.getTime() + 6 * 3600_000);
  // Titles unique to this call find the ids the rows were given.
  const call = randomBytes(4).toString('hex');
  const ids: string[] = [];
  for (let first = 0; first < count; first += VOUCHERS_PER_INSERT) {
    const titles = Array.from({ length: Math.min(VOUCHERS_PER_INSERT, count - first) }, (_, i) => `Bench voucher ${call}-${first + i + 1}`);
    await db.transaction().execute(async (trx) => {
      await trx
        .insertInto('tb_voucher')
        .values(titles.map((title) => ({ shop_id: shopId, title, pay_value: '100', actual_value: '200', type: 1 })))
        .execute();
      const rows = await trx.selectFrom('tb_voucher').select(['id', 'title']).where('shop_id', '=', shopId).where('title', 'in', titles).execute();
      const idOf = new Map(rows.map((row) => [row.title, row.id]));
      const created = titles.map((title) => idOf.get(title)!);
      await trx
        .insertInto('tb_seckill_voucher')
        .values(created.map((voucherId) => ({ voucher_id: voucherId, stock, begin_time: begin, end_time: end })))
        .execute();
      ids.push(...created);
    });
  }
  for (let first = 0; first < ids.length; first += PUBLISHES_AT_ONCE) {
    await Promise.all(ids.slice(first, first + PUBLISHES_AT_ONCE).map((voucherId) => sale.publisher.publish({ voucherId, stock, begin, end })));
  }
  return ids;
}
