import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSeckill } from '../../../../src/modules/seckill/index.js';
import { createDb } from '../../../../src/infra/db.js';
import { OrderRepository } from '../../../../src/modules/seckill/record/order-repository.js';
import { OrderWorker } from '../../../../src/modules/seckill/writer/order-worker.js';
import { ORDER_GROUP } from '../../../../src/modules/seckill/keys.js';
import { createTestEnv, type TestEnv } from '../../../support/test-env.js';
import { insertSeckillVoucher, mysqlOrders, mysqlStock, orderWorkerProcess, ordersOfEntries } from '../../../support/seckill.js';
import { eventually } from '../../../support/eventually.js';

let env: TestEnv;
let seckill: ReturnType<typeof buildSeckill>;
const children: ChildProcess[] = [];

beforeAll(async () => {
  env = await createTestEnv({
    SECKILL_STREAM_SHARDS: '2',
    SECKILL_MAX_DELIVERIES: '3',
    SECKILL_CLAIM_IDLE_MS: '500',
    SECKILL_WORKER_BATCH: '20',
  });
  seckill = buildSeckill({
    config: env.config,
    redis: env.redis,
    db: env.db,
    consumerName: 'in-test',
    log: pino({ level: process.env.DEBUG_LOG ?? 'silent' }),
  });
});

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await seckill?.worker.stop();
  await env?.cleanup();
});

/** Accepts orders for users first..first+count-1 through the real Lua path; returns their ids. */
async function placeOrders(voucherId: string, first: number, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 200) {
    const chunk = Array.from({ length: Math.min(200, count - i) }, (_, j) => String(first + i + j));
    ids.push(...(await Promise.all(chunk.map((userId) => seckill.placement.place(userId, voucherId)))));
  }
  return ids;
}

function startWorkerProcess(consumer: string): ChildProcess {
  // The claim idle time stays long: recovery below is the restarted consumer re-reading its own pending list.
  const child = orderWorkerProcess(env, consumer, { SECKILL_WORKER_BATCH: '20' });
  children.push(child);
  return child;
}

/** Delivers entries to a consumer that never acknowledges them: what a crash right after XREADGROUP leaves. */
async function deliverWithoutAck(consumer: string, count: number): Promise<{ entries: number; orders: number }> {
  const delivered = { entries: 0, orders: 0 };
  for (const shard of [0, 1]) {
    await seckill.stream.ensureGroup(shard);
    const reply = (await env.redis.xreadgroup('GROUP', ORDER_GROUP, consumer, 'COUNT', count, 'STREAMS', seckill.keys.shard(shard).stream, '>')) as Array<
      [string, Array<[string, string[]]>]
    > | null;
    const entries = reply?.[0]?.[1] ?? [];
    delivered.entries += entries.length;
    delivered.orders += ordersOfEntries(entries).length;
  }
  return delivered;
}

/** The orders of a shard's entries pending for a consumer. */
async function pendingOrders(shard: number, consumer: string): Promise<{ orderId: string; deliveries: number }[]> {
  const { stream } = seckill.keys.shard(shard);
  const pending = (await env.redis.xpending(stream, ORDER_GROUP, '-', '+', 1000, consumer)) as Array<[string, string, number, number]>;
  const orders = [];
  for (const [id, , , deliveries] of pending) {
    for (const order of ordersOfEntries(await env.redis.xrange(stream, id, id))) orders.push({ orderId: order.orderId, deliveries });
  }
  return orders;
}

async function pendingCount(): Promise<number> {
  let total = 0;
  for (const shard of [0, 1]) {
    const [count] = (await env.redis.xpending(seckill.keys.shard(shard).stream, ORDER_GROUP)) as [number];
    total += count;
  }
  return total;
}

async function expectExactlyOnce(voucherId: string, orderIds: string[], initialStock: number): Promise<void> {
  await eventually(async () => expect(await mysqlOrders(env, voucherId)).toHaveLength(orderIds.length), 30_000);
  const orders = await mysqlOrders(env, voucherId);
  expect(new Set(orders.map((order) => order.id))).toEqual(new Set(orderIds));
  expect(new Set(orders.map((order) => order.user_id)).size).toBe(orderIds.length);
  expect(await mysqlStock(env, voucherId)).toBe(initialStock - orderIds.length);
  expect((await seckill.sale.reads.read(voucherId))?.stock).toBe(initialStock - orderIds.length);
  await eventually(async () => expect(await pendingCount()).toBe(0));
}

describe('order worker recovery', () => {
  it('a worker killed with SIGKILL mid-sale and restarted leaves every accepted order in MySQL exactly once', async () => {
    const stock = 5000;
    const voucherId = await insertSeckillVoucher(env, { stock });
    const accepted = await placeOrders(voucherId, 1, 3000);
    expect((await deliverWithoutAck('crashy', 40)).entries).toBe(40); // crashed once already, right after a read (one voucher: one shard)

    const first = startWorkerProcess('crashy');
    let atKill = 0;
    await eventually(async () => {
      atKill = (await mysqlOrders(env, voucherId)).length;
      expect(atKill).toBeGreaterThan(0);
    }, 30_000);
    first.kill('SIGKILL');
    await once(first, 'exit');
    expect(atKill).toBeLessThan(accepted.length); // it really died in the middle

    // The sale goes on while no worker runs.
    accepted.push(...(await placeOrders(voucherId, 10_001, 500)));

    const second = startWorkerProcess('crashy');
    await expectExactlyOnce(voucherId, accepted, stock);

    second.kill('SIGTERM'); // graceful stop: finishes its batch, closes connections, exits by itself
    const [code] = await once(second, 'exit');
    expect(code).toBe(0);
  }, 90_000);

  it('entries left pending by a consumer that died are claimed by another after the idle time (XAUTOCLAIM)', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 100 });
    const accepted = await placeOrders(voucherId, 20_001, 60);
    expect((await deliverWithoutAck('ghost', 100)).orders).toBe(60);
    // Trimming never drops an entry that is still pending.
    const shard = seckill.keys.shardOf(voucherId);
    await seckill.stream.trimAcknowledged(shard);
    expect(ordersOfEntries(await env.redis.xrange(seckill.keys.shard(shard).stream, '-', '+')).filter((order) => order.voucherId === voucherId)).toHaveLength(
      60,
    );
    seckill.worker.start();
    try {
      await expectExactlyOnce(voucherId, accepted, 100);
    } finally {
      await seckill.worker.stop();
    }
  });

  it('never dead-letters orders while MySQL is unreachable, however often they are retried, and writes them once it is back', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 10 });
    const accepted = await placeOrders(voucherId, 40_001, 5);
    const log = pino({ level: 'silent' });
    const options = { consumer: 'outage', batchSize: 20, maxDeliveries: 2, claimIdleMs: 60_000, retryDelayMs: 1, log };
    const deadDb = createDb({ mysqlUrl: 'mysql://root@127.0.0.1:1/nothing', poolSize: 1 });
    const shard = seckill.keys.shardOf(voucherId);
    const { deadLetters } = seckill.keys.shard(shard);
    try {
      const broken = new OrderWorker(seckill.stream, seckill.sale.settlement, new OrderRepository(deadDb), options);
      for (let round = 0; round < 6; round += 1) {
        await broken.drainOnce();
        await sleep(5);
      }
      const pending = await pendingOrders(shard, 'outage');
      expect(pending.map((order) => order.orderId).sort()).toEqual([...accepted].sort());
      expect(Math.min(...pending.map((order) => order.deliveries))).toBeGreaterThan(options.maxDeliveries);
      expect(await env.redis.xlen(deadLetters)).toBe(0);
    } finally {
      await deadDb.destroy();
    }
    // MySQL is back: the same consumer writes every order.
    const healthy = new OrderWorker(seckill.stream, seckill.sale.settlement, new OrderRepository(env.db), options);
    await healthy.drainOnce();
    await expectExactlyOnce(voucherId, accepted, 10);
  });

  it('moves a poison message to the dead-letter stream with its error and gives its stock back', async () => {
    // MySQL has no stock left but Redis believes there is one: every write of the order fails.
    const voucherId = await insertSeckillVoucher(env, { stock: 0 });
    await seckill.sale.publisher.publish({ voucherId, stock: 1, begin: new Date(Date.now() - 60_000), end: new Date(Date.now() + 3600_000) });
    const [orderId] = await placeOrders(voucherId, 30_001, 1);
    expect((await seckill.sale.reads.read(voucherId))?.stock).toBe(0);
    const shard = seckill.keys.shardOf(voucherId);
    const { deadLetters, stream } = seckill.keys.shard(shard);
    // And one entry that cannot even be parsed.
    await seckill.stream.ensureGroup(shard);
    await env.redis.xadd(stream, '*', 'orderId', 'not-a-number');

    seckill.worker.start();
    try {
      await eventually(async () => expect(await env.redis.xlen(deadLetters)).toBe(2), 20_000);
    } finally {
      await seckill.worker.stop();
    }
    const dead = (await env.redis.xrange(deadLetters, '-', '+')).map(([, fields]) => {
      const map: Record<string, string> = {};
      for (let i = 0; i < fields.length; i += 2) map[fields[i]!] = fields[i + 1]!;
      return map;
    });
    const poison = dead.find((entry) => entry.orderId === orderId)!;
    expect(poison).toMatchObject({ userId: '30001', voucherId, error: expect.stringContaining('no stock left in MySQL') });
    expect(Number(poison.deliveries)).toBeGreaterThanOrEqual(3);
    expect(dead.find((entry) => entry.orderId === 'not-a-number')?.error).toContain('malformed');

    expect((await seckill.sale.reads.read(voucherId))?.stock).toBe(1); // stock given back
    expect(await env.redis.hexists(seckill.keys.voucher(voucherId).buyers, '30001')).toBe(0); // may buy again
    expect(await mysqlOrders(env, voucherId)).toHaveLength(0);
    expect(await pendingCount()).toBe(0);
  });

  it('a batch entry with one poison order: the others are written, only the poison one is dead-lettered and given back, the entry acknowledged', async () => {
    // Two vouchers of one shard: a healthy one, and one whose MySQL has no stock left while Redis sells a unit.
    const healthy = await insertSeckillVoucher(env, { stock: 10 });
    let poisoned: string;
    do poisoned = await insertSeckillVoucher(env, { stock: 0 });
    while (seckill.keys.shardOf(healthy) !== seckill.keys.shardOf(poisoned));
    await seckill.sale.publisher.publish({ voucherId: poisoned, stock: 1, begin: new Date(Date.now() - 60_000), end: new Date(Date.now() + 3600_000) });
    const [good] = await placeOrders(healthy, 50_001, 1);
    const [poison] = await placeOrders(poisoned, 50_002, 1);
    // Their entries made into one, as reserve.lua writes a batch: what the worker reads is one entry of two orders.
    const shard = seckill.keys.shardOf(healthy);
    const { stream, deadLetters, queued } = seckill.keys.shard(shard);
    await seckill.stream.ensureGroup(shard);
    const ours = (await env.redis.xrange(stream, '-', '+')).filter(([, fields]) =>
      ordersOfEntries([['0-1', fields]]).some((order) => [good, poison].includes(order.orderId)),
    );
    const orders = ordersOfEntries(ours);
    expect(orders.map((order) => order.orderId).sort()).toEqual([good, poison].sort());
    await env.redis.xdel(stream, ...ours.map(([id]) => id));
    const packed = orders.map((order) => `${order.orderId}:${order.userId}:${order.voucherId}:${order.slot}`).join(',');
    await env.redis.xadd(stream, '*', 'acceptedMs', String(orders[0]!.acceptedMs), 'orders', packed);

    seckill.worker.start();
    try {
      await eventually(async () => expect((await env.redis.xrange(deadLetters, '-', '+')).some(([, fields]) => fields.includes(poison!))).toBe(true), 20_000);
      await eventually(async () => expect(await pendingCount()).toBe(0));
    } finally {
      await seckill.worker.stop();
    }
    expect((await mysqlOrders(env, healthy)).map((order) => order.id)).toEqual([good]);
    expect(await mysqlOrders(env, poisoned)).toHaveLength(0);
    const dead = (await env.redis.xrange(deadLetters, '-', '+')).filter(([, fields]) => fields.includes(good!) || fields.includes(poison!));
    expect(dead).toHaveLength(1); // the written order is not among the dead letters
    expect((await seckill.sale.reads.read(poisoned))?.stock).toBe(1); // the poison order's unit given back
    expect((await seckill.sale.reads.read(healthy))?.stock).toBe(9); // the written order's unit stays sold
    expect(await env.redis.hmget(queued, good!, poison!)).toEqual([null, null]);
  });
});
