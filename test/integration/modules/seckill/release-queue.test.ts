import pino from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics, type Metrics } from '../../../../src/infra/metrics.js';
import { buildSeckill, type Seckill } from '../../../../src/modules/seckill/index.js';
import { unpaidDueKey } from '../../../../src/modules/seckill/keys.js';
import { UnpaidQueue } from '../../../../src/modules/seckill/unpaid/unpaid-queue.js';
import { createTestEnv, type TestEnv } from '../../../support/test-env.js';
import { insertSeckillVoucher, mysqlOrders, mysqlStock, releaseLateness as lateness } from '../../../support/seckill.js';

/** The payment window of this file: long enough to place and write every order before the first is due. */
const WINDOW_SECONDS = 3;
const log = pino({ level: 'silent' });

let env: TestEnv;
const instances: Seckill[] = [];

beforeAll(async () => {
  env = await createTestEnv({ SECKILL_PAYMENT_WINDOW_SECONDS: String(WINDOW_SECONDS), MYSQL_POOL_SIZE: '10', SECKILL_RELEASE_POLL_MS: '150' });
});

// Each test's instances stop with it: no other test's poller takes its orders.
afterEach(async () => {
  await Promise.all(instances.splice(0).map((instance) => instance.close()));
});

afterAll(async () => {
  await env?.cleanup();
});

/** An instance whose worker writes orders and whose canceller polls the queue; no sweep, so the queue alone cancels. */
function startInstance(consumerName: string, metrics: Metrics): Seckill {
  const instance = buildSeckill({ config: env.config, redis: env.redis, db: env.db, log, metrics, consumerName });
  instances.push(instance);
  instance.worker.start();
  instance.canceller.startPolling();
  return instance;
}

async function placeOrders(instance: Seckill, voucherId: string, buyers: number, firstUser: number): Promise<string[]> {
  const users = Array.from({ length: buyers }, (_, index) => String(firstUser + index));
  return Promise.all(users.map((user) => instance.placement.place(user, voucherId)));
}

async function until(what: string, done: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

/** Every member of the voucher's shard queue with its due time (ms), by order id. */
async function dueTimes(instance: Seckill, voucherId: string): Promise<Map<string, number>> {
  const flat = await env.redis.zrange(unpaidDueKey(instance.keys.shardOf(voucherId)), 0, -1, 'WITHSCORES');
  const due = new Map<string, number>();
  for (let i = 0; i < flat.length; i += 2) due.set(flat[i]!.split(':')[0]!, Number(flat[i + 1]));
  return due;
}

describe('the release queue', () => {
  // First, while no other instance polls the queue.
  it('schedules the sync strategy’s orders too, and hands a claimed order to another instance once the claim lapses', async () => {
    const sync = buildSeckill({ config: { ...env.config, seckill: { ...env.config.seckill, strategy: 'sync' } }, redis: env.redis, db: env.db, log });
    instances.push(sync);
    const voucherId = await insertSeckillVoucher(env, { stock: 5 });
    const orderId = await sync.placement.place('2001', voucherId);
    const shard = sync.keys.shardOf(voucherId);
    expect([...(await dueTimes(sync, voucherId)).keys()]).toContain(orderId);

    // Due now: push the due time back. A claims it and dies before cancelling; B gets nothing until A's lease ends.
    await env.redis.zadd(unpaidDueKey(shard), 'XX', 0, `${orderId}:2001:${voucherId}:1`);
    // A lease of 1 s: a busy machine's pause between the two claims below stays under it (300 ms did not always).
    const leaseMs = 1_000;
    const claimer = new UnpaidQueue(env.redis, sync.keys, WINDOW_SECONDS * 1000, leaseMs);
    const claimedAt = Date.now();
    expect((await claimer.claim(shard, 10)).map((order) => order.orderId)).toEqual([orderId]);
    expect(await claimer.claim(shard, 10)).toEqual([]);
    let again: Awaited<ReturnType<UnpaidQueue['claim']>> = [];
    await until('the claim to lapse', async () => (again = await claimer.claim(shard, 10)).length > 0);
    expect(Date.now() - claimedAt).toBeGreaterThanOrEqual(leaseMs - 5); // not before the lease ended
    expect(again).toMatchObject([{ orderId, userId: '2001', voucherId, dueMs: expect.any(Number) as number }]);
    await claimer.done(shard, [again[0]!.member]);
    expect(await claimer.size(shard)).toBe(0);
  });

  it('schedules a batch larger than one ZADD in one call, each at acceptance + window, and keeps due times when scheduled again', async () => {
    const seckill = buildSeckill({ config: env.config, redis: env.redis, db: env.db, log });
    instances.push(seckill);
    const voucherId = '990000001';
    const queue = new UnpaidQueue(env.redis, seckill.keys, WINDOW_SECONDS * 1000);
    // More than the script's chunk of 1,000 members per ZADD.
    const orders = Array.from({ length: 2_500 }, (_, i) => ({
      orderId: String(7_000_000 + i),
      userId: String(5_000 + i),
      voucherId,
      slot: 1,
      acceptedMs: 1_000_000 + i,
    }));
    await queue.schedule(orders);
    const due = await dueTimes(seckill, voucherId);
    expect(due.size).toBe(orders.length);
    expect(orders.every((order) => due.get(order.orderId) === order.acceptedMs + WINDOW_SECONDS * 1000)).toBe(true);
    // NX: a redelivered write never moves a due time.
    await queue.schedule(orders.map((order) => ({ ...order, acceptedMs: order.acceptedMs + 60_000 })));
    expect(await dueTimes(seckill, voucherId)).toEqual(due);
    await env.redis.del(unpaidDueKey(seckill.keys.shardOf(voucherId)));
  });

  it('cancels 200 unpaid orders on time: p99 of (cancel seen in MySQL − due time) ≤ 1 s, units back in MySQL and Redis', async () => {
    const metrics = createMetrics();
    const instance = startInstance('late-a', metrics);
    const voucherId = await insertSeckillVoucher(env, { stock: 200 });
    const orderIds = await placeOrders(instance, voucherId, 200, 1);
    // Scheduled right after each batch's commit.
    await until('the worker to write and schedule 200 orders', async () => (await dueTimes(instance, voucherId)).size === 200);
    expect(await mysqlOrders(env, voucherId)).toHaveLength(200);
    const due = await dueTimes(instance, voucherId);
    expect(new Set(due.keys())).toEqual(new Set(orderIds));

    // The moment each order is first seen cancelled, polled every 25 ms (so measured up to 25 ms late).
    const seenCancelled = new Map<string, number>();
    await until('every order to be cancelled', async () => {
      const now = Date.now();
      for (const order of await mysqlOrders(env, voucherId)) if (order.status === 4 && !seenCancelled.has(order.id)) seenCancelled.set(order.id, now);
      return seenCancelled.size === 200;
    });
    const late = orderIds.map((orderId) => seenCancelled.get(orderId)! - due.get(orderId)!).sort((a, b) => a - b);
    expect(late[0]).toBeGreaterThanOrEqual(-5); // never early (both clocks are this machine's)
    const p99 = late[Math.ceil(late.length * 0.99) - 1]!;
    expect(p99, `release lateness (ms): p50 ${late[99]!}, p99 ${p99}, max ${late[199]!}`).toBeLessThanOrEqual(1000);

    // Counted once the unit is back in Redis, a moment after the MySQL commit the loop above saw.
    await until('200 cancellations counted', async () => (await lateness(metrics, 'queue')).count >= 200);
    const measured = await lateness(metrics, 'queue');
    expect(measured.count).toBe(200);
    expect(measured.withinOneSecond).toBeGreaterThanOrEqual(198);
    await until('every unit back in Redis', async () => (await instance.sale.reads.stockOf(voucherId)) === 200);
    expect(await mysqlStock(env, voucherId)).toBe(200);
    expect((await mysqlOrders(env, voucherId)).every((order) => order.stock_released === 1 && order.live === null)).toBe(true);
    expect(await instance.unpaidQueue.size(instance.keys.shardOf(voucherId))).toBe(0);
  }, 40_000);

  it('with two instances polling, cancels each order exactly once and leaves paid orders alone', async () => {
    const metricsA = createMetrics();
    const metricsB = createMetrics();
    const a = startInstance('twice-a', metricsA);
    const b = startInstance('twice-b', metricsB);
    const voucherId = await insertSeckillVoucher(env, { stock: 100 });
    const orderIds = [...(await placeOrders(a, voucherId, 50, 1001)), ...(await placeOrders(b, voucherId, 50, 1051))];
    await until('100 orders in MySQL', async () => (await mysqlOrders(env, voucherId)).length === 100);
    await a.userOrders.pay('1001', orderIds[0]!);

    await until('99 orders cancelled', async () => (await mysqlOrders(env, voucherId)).filter((order) => order.status === 4).length === 99);
    await until('the queue empty', async () => (await a.unpaidQueue.size(a.keys.shardOf(voucherId))) === 0);
    await until('99 cancellations counted', async () => (await lateness(metricsA, 'queue')).count + (await lateness(metricsB, 'queue')).count >= 99);
    // Both pollers stopped, their passes in hand finished: a second cancellation of any order would
    // be counted now (rather than hoping 300 ms was long enough for one).
    await Promise.all([a.canceller.stop(), b.canceller.stop()]);
    const [byA, byB] = [await lateness(metricsA, 'queue'), await lateness(metricsB, 'queue')];
    expect(byA.count + byB.count).toBe(99);
    expect((await mysqlOrders(env, voucherId)).find((order) => order.id === orderIds[0])?.status).toBe(2);
    expect(await mysqlStock(env, voucherId)).toBe(99);
    expect(await a.sale.reads.stockOf(voucherId)).toBe(99);
    // Only the payer still holds a slot of the voucher.
    const slots = await env.redis.hgetall(a.keys.voucher(voucherId).buyers);
    expect(Object.keys(slots).filter((userId) => Number(slots[userId]) !== 0)).toEqual(['1001']);
  }, 40_000);
});
