import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../../../src/infra/config.js';
import { createDb } from '../../../../src/infra/db.js';
import { buildSeckill } from '../../../../src/modules/seckill/index.js';
import { ORDER_GROUP } from '../../../../src/modules/seckill/keys.js';
import { REFUSALS } from '../../../../src/modules/seckill/messages.js';
import { OrderWorker } from '../../../../src/modules/seckill/writer/order-worker.js';
import { reconcileSeckill } from '../../../../src/modules/seckill/admin/reconcile.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';
import { HOUR, buy, insertSeckillVoucher, mysqlOrders, mysqlStock } from '../../../support/seckill.js';

/**
 * Instances on different SECKILL_STRATEGY values selling one voucher, at once and one after the
 * other (a switch mid-sale, in both directions): every "accepted" answer is an order in MySQL,
 * nothing is oversold or sold twice to a user, nothing is dead-lettered, and Redis agrees with
 * MySQL (the reconciliation finds nothing).
 */
let env: TestEnv;
let asyncApp: FastifyInstance;
let syncApp: FastifyInstance;
let users: Array<{ id: string; token: string }>;
/** The order worker, run by hand (drainOnce) so a test decides when the async backlog is written. */
let worker: ReturnType<typeof buildSeckill>;

const withStrategy = (config: Config, strategy: 'async' | 'sync'): Config => ({ ...config, seckill: { ...config.seckill, strategy } });

beforeAll(async () => {
  env = await createTestEnv({ MYSQL_POOL_SIZE: '20', SECKILL_STREAM_SHARDS: '2' });
  users = await createUsersWithSessions(env, 1000);
  asyncApp = (await buildTestApp(env, undefined, { config: withStrategy(env.config, 'async') })).app;
  syncApp = (await buildTestApp(env, undefined, { config: withStrategy(env.config, 'sync') })).app;
  worker = buildSeckill({ config: env.config, redis: env.redis, db: env.db, consumerName: 'mixed-test', log: pino({ level: 'silent' }) });
});

afterAll(async () => {
  await asyncApp?.close();
  await syncApp?.close();
  await worker?.close();
  await env?.cleanup();
});

/** Buys on `app` for each user; returns the accepted order ids and every refusal message. */
async function sell(app: FastifyInstance, buyers: Array<{ token: string }>, voucherId: string): Promise<{ accepted: string[]; refusals: string[] }> {
  const bodies = (await Promise.all(buyers.map((user) => buy(app, user.token, voucherId)))).map((response) => response.json<Record<string, unknown>>());
  return {
    accepted: bodies.filter((body) => body.success === true).map((body) => body.data as string),
    refusals: bodies.filter((body) => body.success !== true).map((body) => body.errorMsg as string),
  };
}

/** Runs the worker until nothing of the sale is queued, held or pending. */
async function drain(): Promise<void> {
  for (let round = 0; round < 50; round += 1) {
    await worker.worker.drainOnce();
    if ((await backlog()).queued === 0 && (await backlog()).pending === 0) return;
  }
  throw new Error(`not drained: ${JSON.stringify(await backlog())}`);
}

async function backlog(): Promise<{ queued: number; held: number; pending: number; dead: number }> {
  const totals = { queued: 0, held: 0, pending: 0, dead: 0 };
  for (const shard of worker.keys.allShards()) {
    const keys = worker.keys.shard(shard);
    totals.queued += await env.redis.hlen(keys.queued);
    totals.held += await env.redis.zcard(keys.inFlight);
    totals.dead += await env.redis.xlen(keys.deadLetters);
    const summary = (await env.redis.xpending(keys.stream, ORDER_GROUP).catch(() => [0])) as [number];
    totals.pending += summary[0];
  }
  return totals;
}

/** The sale's invariants once everything is written. */
async function expectConsistent(voucherId: string, stock: number, accepted: string[]): Promise<void> {
  await drain();
  const orders = await mysqlOrders(env, voucherId);
  expect(new Set(orders.map((order) => order.id))).toEqual(new Set(accepted)); // accepted = in MySQL, nothing more
  expect(orders).toHaveLength(accepted.length);
  expect(new Set(orders.map((order) => order.user_id)).size).toBe(orders.length); // one per user
  expect(orders.length).toBeLessThanOrEqual(stock); // no oversell
  expect(await mysqlStock(env, voucherId)).toBe(stock - orders.length);
  expect((await worker.sale.reads.read(voucherId))?.stock).toBe(stock - orders.length);
  expect(await backlog()).toEqual({ queued: 0, held: 0, pending: 0, dead: 0 });
  const report = await reconcileSeckill({ db: env.db, sale: worker.sale }, { repair: false, voucherIds: [voucherId] });
  expect(report.drifted).toEqual([]);
}

describe('instances on different seckill strategies share one sale', () => {
  it('async and sync instances selling one voucher at once: 2,000 requests from 1,000 users, stock 300', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 300 });
    const buyers = Array.from({ length: 2000 }, (_, i) => users[i % 1000]!);
    const [onAsync, onSync] = await Promise.all([
      sell(
        asyncApp,
        buyers.filter((_, i) => i % 2 === 0),
        voucherId,
      ),
      sell(
        syncApp,
        buyers.filter((_, i) => i % 2 === 1),
        voucherId,
      ),
    ]);
    const accepted = [...onAsync.accepted, ...onSync.accepted];
    // How the 300 split between the strategies depends on timing (the sync answer is slower); the
    // sequential tests below make each strategy sell part of one sale for certain.
    expect(accepted).toHaveLength(300);
    const expected = new Set<string>([REFUSALS.soldOut, REFUSALS.alreadyBought, REFUSALS.busy]);
    expect([...onAsync.refusals, ...onSync.refusals].filter((message) => !expected.has(message))).toEqual([]);
    await expectConsistent(voucherId, 300, accepted);
  });

  it('switched from sync to async mid-sale (the sync half is visible to the async instance)', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 10 });
    const first = await sell(syncApp, users.slice(0, 6), voucherId);
    expect(first.accepted).toHaveLength(6);
    // The same sale restarted on async: 4 left, not 10; the sync buyers are known.
    const again = await sell(asyncApp, users.slice(0, 6), voucherId);
    expect(again.refusals).toEqual(Array(6).fill(REFUSALS.alreadyBought));
    const rest = await sell(asyncApp, users.slice(6, 20), voucherId);
    expect(rest.accepted).toHaveLength(4);
    expect(rest.refusals).toEqual(Array(10).fill(REFUSALS.soldOut));
    await expectConsistent(voucherId, 10, [...first.accepted, ...rest.accepted]);
  });

  it('switched from async to sync while the async orders are still queued (not yet in MySQL)', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 10 });
    const first = await sell(asyncApp, users.slice(100, 106), voucherId);
    expect(first.accepted).toHaveLength(6);
    expect(await mysqlStock(env, voucherId)).toBe(10); // the worker has not run: MySQL still says 10
    const rest = await sell(syncApp, users.slice(100, 120), voucherId);
    expect(rest.accepted).toHaveLength(4);
    // The six async buyers are refused, as already bought or, if their request came after the last
    // unit went (requests run concurrently), as sold out; expectConsistent checks one order per user.
    expect(rest.refusals).toHaveLength(16);
    expect(rest.refusals.every((message) => message === REFUSALS.alreadyBought || message === REFUSALS.soldOut)).toBe(true);
    expect(await mysqlStock(env, voucherId)).toBe(6); // the sync orders are written before their answer
    await expectConsistent(voucherId, 10, [...first.accepted, ...rest.accepted]); // and the queued async ones still fit
  });

  it('a sync order whose MySQL write fails is handed to the worker and written, not dropped', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 5 });
    await worker.sale.publisher.publish({ voucherId, stock: 5, begin: new Date(Date.now() - HOUR), end: new Date(Date.now() + HOUR) });
    const deadDb = createDb({ mysqlUrl: 'mysql://root@127.0.0.1:1/nothing', poolSize: 1 });
    const broken = buildSeckill({ config: withStrategy(env.config, 'sync'), redis: env.redis, db: deadDb, log: pino({ level: 'silent' }) });
    try {
      const orderId = await broken.placement.place(users[200]!.id, voucherId);
      expect(await worker.userOrders.get(users[200]!.id, orderId)).toMatchObject({ state: 'queued' });
      await expectConsistent(voucherId, 5, [orderId]);
    } finally {
      await broken.close();
      await deadDb.destroy();
    }
  });

  it('a sync order whose MySQL write fails for a reason of its own is rolled back in Redis and answered with the error', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 5 });
    await worker.sale.publisher.publish({ voucherId, stock: 5, begin: new Date(Date.now() - HOUR), end: new Date(Date.now() + HOUR) });
    // Not an outage (ER_BAD_DB_ERROR is not transient): the transaction never ran, nothing to hand off.
    const wrongUrl = new URL(env.mysqlUrl);
    wrongUrl.pathname = '/no_such_database_here';
    const wrongDb = createDb({ mysqlUrl: wrongUrl.toString(), poolSize: 1 });
    const broken = buildSeckill({ config: withStrategy(env.config, 'sync'), redis: env.redis, db: wrongDb, log: pino({ level: 'silent' }) });
    try {
      await expect(broken.placement.place(users[250]!.id, voucherId)).rejects.toThrow(/no_such_database_here/);
      expect((await worker.sale.reads.read(voucherId))?.stock).toBe(5);
      expect(await env.redis.hexists(worker.keys.voucher(voucherId).buyers, users[250]!.id)).toBe(0);
      await expectConsistent(voucherId, 5, []);
    } finally {
      await broken.close();
      await wrongDb.destroy();
    }
  });

  it('a sync order whose request died before its MySQL write is streamed by the worker after the hold time', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 5 });
    await worker.sale.publisher.publish({ voucherId, stock: 5, begin: new Date(Date.now() - HOUR), end: new Date(Date.now() + HOUR) });
    // What a sync instance leaves when it dies between reserve.lua ("hold") and its transaction.
    const order = { orderId: '987654321', userId: users[300]!.id, voucherId };
    const reserved = await worker.sale.batches.reserve(order, 'hold');
    expect(reserved).toMatchObject({ outcome: 'accepted', slot: 1 });
    await worker.worker.drainOnce();
    expect((await backlog()).held).toBe(1); // younger than the hold time: its request may still be writing
    // A worker with a hold time of 0, so the test need not wait a minute.
    const options = { consumer: 'mixed-test', batchSize: 100, maxDeliveries: 5, claimIdleMs: 60_000, handOffHeldAfterMs: 0, log: pino({ level: 'silent' }) };
    await new OrderWorker(worker.stream, worker.sale.settlement, worker.orders, options).drainOnce();
    await expectConsistent(voucherId, 5, [order.orderId]);
    // Handed off later, written later: its create_time is still the acceptance (the in-flight score).
    const row = await env.db.selectFrom('tb_voucher_order').select('create_time').where('id', '=', order.orderId).executeTakeFirstOrThrow();
    expect(reserved.outcome === 'accepted' && row.create_time.getTime()).toBe(reserved.outcome === 'accepted' && reserved.acceptedMs);
  });
});
