/**
 * The order worker's shard loops write the batches that are ready together in one transaction
 * (writer/group-commit.ts): one multi-row insert, one stock update for every voucher of the group
 * (`CASE voucher_id`), one release-queue script per shard, one PUBLISH of `created`, one
 * acknowledging MULTI per shard. Counted on a throw-away redis-server (INFO commandstats) and by a
 * Kysely plugin on the worker's statements. A voucher short of stock in MySQL fails the group's
 * one statement; every shard's batch is then written on its own, and the short voucher's orders
 * one by one, as before: the order that finds no stock is dead-lettered and its unit given back.
 */
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import { buildSeckill } from '../../../../src/modules/seckill/index.js';
import { ORDER_GROUP, orderEventsChannel } from '../../../../src/modules/seckill/keys.js';
import { unpaidDueKey } from '../../../../src/modules/seckill/keys.js';
import type { NewOrder, OrderChange } from '../../../../src/modules/seckill/types.js';
import { DueTrackedOrders } from '../../../../src/modules/seckill/unpaid/due-tracked-orders.js';
import { OrderWorker } from '../../../../src/modules/seckill/writer/order-worker.js';
import { parseOrder } from '../../../../src/modules/seckill/writer/order-stream.js';
import { startRedisServer, type RedisServer } from '../../../../kit/redis-servers.js';
import { createTestEnv, type TestEnv } from '../../../support/test-env.js';
import { insertSeckillVoucher, mysqlOrders, mysqlStock, ordersOfEntries } from '../../../support/seckill.js';

const SHARDS = 4;
const PAYMENT_WINDOW_MS = 15 * 60_000;

/** Counts the UPDATE statements the worker's repository sends. */
class UpdateCounter implements KyselyPlugin {
  updates = 0;
  transformQuery({ node }: PluginTransformQueryArgs): RootOperationNode {
    if (node.kind === 'UpdateQueryNode') this.updates += 1;
    return node;
  }
  transformResult({ result }: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return Promise.resolve(result);
  }
}

let redisServer: RedisServer;
let env: TestEnv;
let seckill: ReturnType<typeof buildSeckill>;
let subscriber: Redis;
let events: OrderChange[][];
let worker: OrderWorker | undefined;
let releaseHeld: (() => void) | undefined;

beforeAll(async () => {
  redisServer = await startRedisServer();
  env = await createTestEnv({ REDIS_URL: redisServer.url, SECKILL_STREAM_SHARDS: String(SHARDS) });
  seckill = buildSeckill({ config: env.config, redis: env.redis, db: env.db, consumerName: 'group-test', log: pino({ level: 'silent' }) });
  events = [];
  subscriber = new Redis(redisServer.url);
  subscriber.on('message', (_channel: string, message: string) => events.push(JSON.parse(message) as OrderChange[]));
  await subscriber.subscribe(orderEventsChannel(env.keyPrefix));
});

afterEach(async () => {
  releaseHeld?.(); // a failed test may leave its first write held: stop() waits for it
  await worker?.stop();
  worker = undefined;
});

afterAll(async () => {
  subscriber?.disconnect();
  await env?.cleanup();
  await redisServer?.kill();
});

/** The worker's repository, its first write held until `release()`, every write's orders and UPDATE statements recorded. */
function heldRepository() {
  const counter = new UpdateCounter();
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  releaseHeld = release;
  const writes: Array<{ orders: readonly NewOrder[]; updates: number }> = [];
  class Held extends DueTrackedOrders {
    override async persistAllNew(orders: readonly NewOrder[]): Promise<void> {
      const write = { orders, updates: 0 };
      writes.push(write);
      if (writes.length === 1) await gate;
      const before = counter.updates;
      try {
        await super.persistAllNew(orders);
      } finally {
        write.updates = counter.updates - before;
      }
    }
  }
  const orders = new Held(env.db.withPlugin(counter), seckill.unpaidQueue, (error) => {
    throw error;
  });
  return { orders, writes, release };
}

function startWorker(orders: DueTrackedOrders): OrderWorker {
  worker = new OrderWorker(seckill.stream, seckill.sale.settlement, orders, {
    consumer: 'group-test',
    batchSize: 100,
    maxDeliveries: 1,
    claimIdleMs: 60_000,
    retryDelayMs: 50,
    blockMs: 100,
    log: pino({ level: 'silent' }),
    onWritten: (written) =>
      seckill.events.changed(written.map((order) => ({ orderId: order.orderId, userId: order.userId, voucherId: order.voucherId, state: 'created' as const }))),
  });
  worker.start();
  return worker;
}

/** Vouchers of the given stock, `perShard` on each shard. */
async function vouchersByShard(perShard: number, stock: number): Promise<string[][]> {
  const byShard: string[][] = Array.from({ length: SHARDS }, () => []);
  while (byShard.some((vouchers) => vouchers.length < perShard)) {
    const voucher = await insertSeckillVoucher(env, { stock });
    const vouchers = byShard[seckill.keys.shardOf(voucher)]!;
    if (vouchers.length < perShard) vouchers.push(voucher);
  }
  return byShard;
}

let nextUser = 1000;
async function place(voucher: string): Promise<string> {
  nextUser += 1;
  return seckill.placement.place(String(nextUser), voucher);
}

async function commandCalls(): Promise<Record<string, number>> {
  const raw = new Redis(redisServer.url);
  try {
    const text = await raw.info('commandstats');
    return Object.fromEntries([...text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((match) => [match[1]!, Number(match[2])]));
  } finally {
    raw.disconnect();
  }
}

async function backlog(): Promise<{ pending: number; queued: number }> {
  let pending = 0;
  let queued = 0;
  for (const shard of seckill.keys.allShards()) {
    const { stream, queued: queuedKey } = seckill.keys.shard(shard);
    pending += ((await env.redis.xpending(stream, ORDER_GROUP)) as [number])[0];
    queued += await env.redis.hlen(queuedKey);
  }
  return { pending, queued };
}

/** Every order in the streams, with its acceptance time. */
async function streamedOrders() {
  const orders = [];
  for (const shard of seckill.keys.allShards()) {
    orders.push(...ordersOfEntries(await env.redis.xrange(seckill.keys.shard(shard).stream, '-', '+')));
  }
  return orders;
}

describe('order worker group commit', () => {
  it('writes the batches of several shards that wait behind a write in one transaction, with one stock UPDATE for all their vouchers', async () => {
    const byShard = await vouchersByShard(2, 10);
    // Three orders for each of two vouchers on every shard, all in the streams before the worker starts.
    const placed = await Promise.all(byShard.flat().flatMap((voucher) => [place(voucher), place(voucher), place(voucher)]));
    const accepted = new Map((await streamedOrders()).map((order) => [order.orderId, order]));
    const { orders, writes, release } = heldRepository();
    startWorker(orders);
    // The first shard's batch goes out at once and is held in MySQL; the other three shards' batches wait for it.
    await expect.poll(() => writes.length).toBe(1);
    await expect.poll(() => worker!.writes.waiting).toBe(SHARDS - 1);
    const before = await commandCalls();

    release();
    await expect.poll(backlog).toEqual({ pending: 0, queued: 0 });

    expect(writes.map((write) => write.orders.length)).toEqual([6, 18]);
    expect(new Set(writes[0]!.orders.map((order) => seckill.keys.shardOf(order.voucherId))).size).toBe(1);
    expect(new Set(writes[1]!.orders.map((order) => seckill.keys.shardOf(order.voucherId))).size).toBe(SHARDS - 1);
    expect(new Set(writes[1]!.orders.map((order) => order.voucherId)).size).toBe(6);
    expect(writes.map((write) => write.updates)).toEqual([1, 1]); // six vouchers on three shards: one statement
    for (const voucher of byShard.flat()) expect(await mysqlStock(env, voucher)).toBe(10 - 3);
    const written = (await Promise.all(byShard.flat().map((voucher) => mysqlOrders(env, voucher)))).flat();
    expect(written.map((order) => order.id).sort()).toEqual([...placed].sort());

    // Each order scheduled for cancellation at the end of its payment window, counted from its acceptance.
    for (const order of accepted.values()) {
      const member = `${order.orderId}:${order.userId}:${order.voucherId}:${order.slot}`;
      expect(Number(await env.redis.zscore(unpaidDueKey(seckill.keys.shardOf(order.voucherId)), member))).toBe(order.acceptedMs + PAYMENT_WINDOW_MS);
    }
    // `created` for every order: the first write's in one message, the group's in another.
    await expect.poll(() => events.flat().length).toBe(placed.length);
    const ids = (list: readonly { orderId: string }[]) => list.map((order) => order.orderId).sort();
    expect(events.map(ids)).toEqual(writes.map((write) => ids(write.orders)));
    expect(events.flat().every((change) => change.state === 'created')).toBe(true);

    // Redis per write: one PUBLISH; per shard batch one acknowledging MULTI and one ZADD of its orders' due times.
    const after = await commandCalls();
    const delta = (name: string) => (after[name] ?? 0) - (before[name] ?? 0);
    expect({ publish: delta('publish'), exec: delta('exec'), xack: delta('xack'), hdel: delta('hdel'), zadd: delta('zadd') }).toEqual({
      publish: 2,
      exec: SHARDS,
      xack: SHARDS,
      hdel: SHARDS,
      zadd: SHARDS,
    });
  });

  it('a voucher short of stock in MySQL fails the group: each shard batch is written alone, the short one order by order as before', async () => {
    const byShard = await vouchersByShard(1, 10);
    const placed = new Map(await Promise.all(byShard.map(async ([voucher]) => [voucher!, [await place(voucher!), await place(voucher!)]] as const)));
    const { orders, writes, release } = heldRepository();
    startWorker(orders);
    await expect.poll(() => writes.length).toBe(1);
    await expect.poll(() => worker!.writes.waiting).toBe(SHARDS - 1);
    // A voucher of the waiting group: MySQL holds one unit where Redis sold two (drift that reconciliation repairs).
    const short = byShard.flat().find((voucher) => voucher !== writes[0]!.orders[0]!.voucherId)!;
    await env.db.updateTable('tb_seckill_voucher').set({ stock: 1 }).where('voucher_id', '=', short).execute();
    const redisStock = (await seckill.sale.reads.read(short))!.stock;
    events.length = 0;

    release();
    await expect.poll(backlog).toEqual({ pending: 0, queued: 0 });

    // The first batch, the group of three, then each of its batches alone; the short voucher's then order by order (persist).
    expect(writes.slice(0, 5).map((write) => write.orders.length)).toEqual([2, 6, 2, 2, 2]);
    // The short voucher's two orders then race for its unit in two transactions: one of them may
    // fail transiently (a deadlock) and be retried (a batch of one) before failing for the stock.
    expect(writes.slice(5).every((write) => write.orders.length === 1 && write.orders[0]!.voucherId === short)).toBe(true);
    for (const voucher of byShard.flat().filter((voucher) => voucher !== short)) expect(await mysqlStock(env, voucher)).toBe(8);
    expect(await mysqlStock(env, short)).toBe(0);
    expect(await mysqlOrders(env, short)).toHaveLength(1);
    const dead = await env.redis.xrange(seckill.keys.shard(seckill.keys.shardOf(short)).deadLetters, '-', '+');
    expect(dead).toHaveLength(1);
    expect(dead[0]![1].join(' ')).toContain('OutOfStockInDatabase');
    expect(placed.get(short)).toContain(parseOrder(dead[0]![0], dead[0]![1])!.orderId);
    // The dead letter's unit is back in Redis.
    expect((await seckill.sale.reads.read(short))!.stock).toBe(redisStock + 1);
    // Every written order was told `created`.
    await expect.poll(() => events.flat().length).toBe(2 * SHARDS - 1);
  });
});
