import pino from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from 'rabbitmq-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics, type Metrics } from '../../../../src/infra/metrics.js';
import { buildSeckill, type Seckill } from '../../../../src/modules/seckill/index.js';
import { unpaidDueKey } from '../../../../src/modules/seckill/keys.js';
import { DELAY_QUEUE, RELEASE_QUEUE } from '../../../../src/modules/seckill/broker/rabbit-topology.js';
import { createTestEnv, type TestEnv } from '../../../support/test-env.js';
import { brokerRelay, createTestVhost, type TestVhost } from '../../../support/rabbitmq.js';
import { eventually } from '../../../support/eventually.js';
import { insertSeckillVoucher, mysqlOrders, mysqlStock, releaseLateness } from '../../../support/seckill.js';

/**
 * Unpaid orders with SECKILL_QUEUE=rabbitmq, gulimall's way: each written order's deadline waits in
 * the delay queue, is dead-lettered into the release queue when due, and the canceller consuming it
 * cancels the order if still unpaid. Against the machine's RabbitMQ, in a vhost of this file's own.
 */
/**
 * The payment window of this file: long enough to place, write and pay the orders before the first
 * is due, with room to spare on a loaded machine (an order written after its due time is late by
 * its write, which is not the lateness this file measures).
 */
const WINDOW_SECONDS = 6;
const log = pino({ level: 'silent' });

let vhost: TestVhost;
let env: TestEnv;
const instances: Seckill[] = [];

beforeAll(async () => {
  vhost = await createTestVhost();
  env = await createTestEnv({
    SECKILL_QUEUE: 'rabbitmq',
    RABBITMQ_URL: vhost.url,
    SECKILL_PAYMENT_WINDOW_SECONDS: String(WINDOW_SECONDS),
    MYSQL_POOL_SIZE: '10',
  });
});

// Each test's instances stop with it: no other test's consumer takes its orders.
afterEach(async () => {
  await Promise.all(instances.splice(0).map((instance) => instance.close()));
});

afterAll(async () => {
  await env?.cleanup();
  await vhost?.delete();
});

/** An instance that decides orders and runs no jobs: no connection to RabbitMQ. */
function placer(): Seckill {
  const instance = buildSeckill({ config: env.config, redis: env.redis, db: env.db, log, consumerName: 'placer' });
  instances.push(instance);
  return instance;
}

/**
 * An instance running the sale's jobs over RabbitMQ (relay, writers, the release queue's consumer),
 * with its sweep and Redis poll stopped: the delay queue alone cancels.
 */
async function startInstance(consumerName: string, metrics: Metrics): Promise<Seckill> {
  const instance = buildSeckill({ config: env.config, redis: env.redis, db: env.db, log, metrics, consumerName });
  instances.push(instance);
  instance.startJobs();
  await instance.canceller.stop();
  return instance;
}

async function placeOrders(instance: Seckill, voucherId: string, buyers: number, firstUser: number): Promise<string[]> {
  const users = Array.from({ length: buyers }, (_, index) => String(firstUser + index));
  return Promise.all(users.map((user) => instance.placement.place(user, voucherId)));
}

async function messagesIn(queue: string): Promise<number> {
  const rabbit = new Connection(vhost.url);
  try {
    return (await rabbit.queueDeclare({ queue, passive: true })).messageCount;
  } finally {
    await rabbit.close();
  }
}

async function cancelledCount(voucherId: string): Promise<number> {
  return (await mysqlOrders(env, voucherId)).filter((order) => order.status === 4).length;
}

describe('unpaid orders over RabbitMQ (a delay queue dead-lettering into the release queue)', () => {
  it('cancels 300 unpaid orders on time: p99 of the recorded lateness ≤ 1 s, each unit back once in MySQL and Redis, none scheduled in Redis', async () => {
    const metrics = createMetrics();
    const instance = await startInstance('late-a', metrics);
    const voucherId = await insertSeckillVoucher(env, { stock: 300 });
    await placeOrders(instance, voucherId, 300, 1);
    await eventually(async () => expect(await cancelledCount(voucherId)).toBe(300), 40_000);
    // Counted once the unit is back in Redis, a moment after the MySQL commit seen above.
    await eventually(async () => expect((await releaseLateness(metrics, 'rabbitmq')).count).toBe(300));
    await instance.close();

    // The lateness the canceller measured (now − due, at each cancellation), read from the histogram's buckets.
    const measured = await releaseLateness(metrics, 'rabbitmq');
    expect(measured.count).toBe(300);
    const buckets = (await metrics.releaseLateness.get()).values
      .filter((value) => value.metricName === 'seckill_release_lateness_seconds_bucket')
      .map((value) => `≤${String((value.labels as Record<string, unknown>).le)}s: ${value.value}`);
    expect(measured.withinOneSecond, `cancellations within 1 s of their due time (${buckets.join(', ')})`).toBeGreaterThanOrEqual(297);
    expect(await mysqlStock(env, voucherId)).toBe(300);
    expect(await placer().sale.reads.stockOf(voucherId)).toBe(300);
    expect((await mysqlOrders(env, voucherId)).every((order) => order.stock_released === 1 && order.live === null)).toBe(true);
    // The delay queue replaced the Redis release queue for these orders; both RabbitMQ queues are drained.
    expect(await env.redis.zcard(unpaidDueKey(instance.keys.shardOf(voucherId)))).toBe(0);
    expect(await messagesIn(DELAY_QUEUE)).toBe(0);
    expect(await messagesIn(RELEASE_QUEUE)).toBe(0);
  }, 60_000);

  it('with two instances consuming the release queue, cancels each order exactly once and leaves a paid order alone', async () => {
    const metricsA = createMetrics();
    const metricsB = createMetrics();
    const a = await startInstance('twice-a', metricsA);
    const b = await startInstance('twice-b', metricsB);
    const voucherId = await insertSeckillVoucher(env, { stock: 100 });
    const orderIds = [...(await placeOrders(a, voucherId, 50, 1001)), ...(await placeOrders(b, voucherId, 50, 1051))];
    await eventually(async () => expect(await mysqlOrders(env, voucherId)).toHaveLength(100));
    expect((await a.userOrders.pay('1001', orderIds[0]!)).state).toBe('paid');

    await eventually(async () => expect(await cancelledCount(voucherId)).toBe(99), 30_000);
    await eventually(async () => expect(await messagesIn(RELEASE_QUEUE)).toBe(0));
    await eventually(async () => expect((await releaseLateness(metricsA, 'rabbitmq')).count + (await releaseLateness(metricsB, 'rabbitmq')).count).toBe(99));
    // Both stopped, the messages in their hands finished: a second cancellation of any order would be counted now.
    await Promise.all([a.close(), b.close()]);
    expect((await releaseLateness(metricsA, 'rabbitmq')).count + (await releaseLateness(metricsB, 'rabbitmq')).count).toBe(99);
    expect((await mysqlOrders(env, voucherId)).find((order) => order.id === orderIds[0])?.status).toBe(2);
    expect(await mysqlStock(env, voucherId)).toBe(99);
    expect(await placer().sale.reads.stockOf(voucherId)).toBe(99);
    // Only the payer still holds a slot of the voucher.
    const slots = await env.redis.hgetall(a.keys.voucher(voucherId).buyers);
    expect(Object.keys(slots).filter((userId) => Number(slots[userId]) !== 0)).toEqual(['1001']);
  }, 60_000);

  it('cancels at once an order written after its due time (after an outage): it skips the delay queue', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 5 });
    // Accepted while no job runs (the writers away), and still in the outbox when its window ends.
    const orderId = await placer().placement.place('3001', voucherId);
    await sleep(WINDOW_SECONDS * 1000 + 200);

    const metrics = createMetrics();
    const startedAt = Date.now();
    const instance = await startInstance('outage-over', metrics);
    await eventually(async () => expect((await mysqlOrders(env, voucherId)).map((order) => [order.id, order.status])).toEqual([[orderId, 4]]), 20_000);
    // Through the delay queue, the order would wait a whole window from its write; it waited none.
    expect(Date.now() - startedAt).toBeLessThan(WINDOW_SECONDS * 1000);
    await eventually(async () => expect(await instance.sale.reads.stockOf(voucherId)).toBe(5));
    expect(await mysqlStock(env, voucherId)).toBe(5);
    // Counted after the release is marked in MySQL, a moment after the unit is back in Redis.
    await eventually(async () => expect((await releaseLateness(metrics, 'rabbitmq')).count).toBe(1));
  }, 30_000);

  it('a deadline RabbitMQ does not confirm (the broker cut off) goes to the Redis release queue and is still cancelled on time', async () => {
    const relay = await brokerRelay();
    const { seckill } = env.config;
    const config = {
      ...env.config,
      // The sync strategy writes MySQL in the request: orders are written while the broker is away.
      seckill: {
        ...seckill,
        strategy: 'sync' as const,
        rabbitmq: { ...seckill.rabbitmq, urls: [vhost.urlVia(relay.port)], connectTimeoutMs: 500, publishTimeoutMs: 500 },
      },
    };
    const metrics = createMetrics();
    const instance = buildSeckill({ config, redis: env.redis, db: env.db, log, metrics, consumerName: 'cut-off' });
    instances.push(instance);
    try {
      instance.startJobs();
      // The Redis queue's poll alone (no sweep): what cancels the order is the queue it was scheduled in.
      await instance.canceller.stop();
      instance.canceller.startPolling();
      await eventually(() => expect(instance.rabbit?.broker.ready).toBe(true));
      relay.cut();

      const voucherId = await insertSeckillVoucher(env, { stock: 5 });
      const orderId = await instance.placement.place('4001', voucherId);
      const shard = instance.keys.shardOf(voucherId);
      expect(await env.redis.zscore(unpaidDueKey(shard), `${orderId}:4001:${voucherId}:1`)).not.toBeNull();
      await eventually(async () => expect((await releaseLateness(metrics, 'queue')).count).toBe(1), 20_000);
      expect((await releaseLateness(metrics, 'queue')).withinOneSecond).toBe(1);
      expect((await mysqlOrders(env, voucherId)).map((order) => [order.id, order.status])).toEqual([[orderId, 4]]);
      await eventually(async () => expect(await instance.sale.reads.stockOf(voucherId)).toBe(5));
    } finally {
      relay.restore();
      await instance.close();
      instances.splice(instances.indexOf(instance), 1);
      await relay.close();
    }
  }, 30_000);
});
