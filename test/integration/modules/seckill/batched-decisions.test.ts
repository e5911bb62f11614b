import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeRedis, createRedis, type RedisClient } from '../../../../src/infra/redis.js';
import { OutcomeUnknown } from '../../../../src/modules/seckill/errors/index.js';
import { SaleKeys } from '../../../../src/modules/seckill/keys.js';
import { VoucherRepository } from '../../../../src/modules/seckill/record/voucher-repository.js';
import { buildSale, type Sale, type SaleOptions } from '../../../../src/modules/seckill/sale/sale.js';
import type { ReserveMode } from '../../../../src/modules/seckill/sale/sale-scripts.js';
import type { OrderRequest, ReserveResult } from '../../../../src/modules/seckill/types.js';
import { stallingRelay, type StallingRelay } from '../../../support/stall.js';
import { startRedisServer } from '../../../../kit/redis-servers.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, metricsAuth, type TestEnv } from '../../../support/test-env.js';
import { HOUR, buy, insertSeckillVoucher, ordersOfEntries, statusOf } from '../../../support/seckill.js';

/**
 * Batched decisions (SECKILL_RESERVE_BATCH_MAX): per shard one reserve.lua call is out at a time
 * and the orders arriving meanwhile go together in the next. Batches are made to form by holding
 * the first call's answer back (a relay in front of Redis that stalls right after it), never by
 * timing: what arrives while a call is out is exactly the next batch.
 */
const SHARDS = 1; // every voucher on {seckill:0}: any mix of vouchers can share a batch

let env: TestEnv;
let relay: StallingRelay;
/** Redis through the relay, with a command bound far longer than any test waits. */
let relayed: RedisClient;
const keys = new SaleKeys(SHARDS);

beforeAll(async () => {
  env = await createTestEnv({ SECKILL_STREAM_SHARDS: String(SHARDS) });
  relay = await stallingRelay(Number(new URL(env.config.redisUrl).port || 6379));
  relayed = relayedRedis(60_000);
  await relayed.ping();
});

afterAll(async () => {
  relay?.resume();
  if (relayed) await closeRedis(relayed);
  await relay?.close();
  await env?.cleanup();
});

function relayedRedis(commandMs: number): RedisClient {
  return createRedis({ ...env.config, redisUrl: `redis://127.0.0.1:${relay.port}/0`, deadlines: { redisCommandMs: commandMs } }, { onError: () => undefined });
}

/** The vouchers of one run of the sequence: each in the state its name says. */
async function saleWorld(sale: Sale) {
  const now = Date.now();
  const open = (stock: number, more: { suspended?: boolean; limitPerUser?: number } = {}) => ({
    stock,
    begin: new Date(now - HOUR),
    end: new Date(now + HOUR),
    ...more,
  });
  const ids = {
    open: await insertSeckillVoucher(env, { stock: 2 }),
    twoPerUser: await insertSeckillVoucher(env, { stock: 5 }),
    paused: await insertSeckillVoucher(env, { stock: 5 }),
    early: await insertSeckillVoucher(env, { stock: 5 }),
    late: await insertSeckillVoucher(env, { stock: 5 }),
    frozen: await insertSeckillVoucher(env, { stock: 5 }),
    // In MySQL only: the first order finds it missing in Redis, publishes it and decides again.
    unpublished: await insertSeckillVoucher(env, { stock: 1 }),
  };
  await sale.publisher.publish({ voucherId: ids.open, ...open(2) });
  await sale.publisher.publish({ voucherId: ids.twoPerUser, ...open(5, { limitPerUser: 2 }) });
  await sale.publisher.publish({ voucherId: ids.paused, ...open(5, { suspended: true }) });
  await sale.publisher.publish({ voucherId: ids.early, stock: 5, begin: new Date(now + HOUR), end: new Date(now + 2 * HOUR) });
  await sale.publisher.publish({ voucherId: ids.late, stock: 5, begin: new Date(now - 2 * HOUR), end: new Date(now - HOUR) });
  await sale.publisher.publish({ voucherId: ids.frozen, ...open(5) });
  await sale.administration.freeze({ voucherId: ids.frozen, begin: new Date(now - HOUR), end: new Date(now + HOUR) }, 'repair-token', 60_000);
  return ids;
}

type World = Awaited<ReturnType<typeof saleWorld>>;
type Step = { user: string; voucher: keyof World; key?: string; mode?: ReserveMode };

/** One sequence with every outcome; users and keys are per run (the runs share the shard's stream). */
const SEQUENCE: Step[] = [
  { user: 'a', voucher: 'open', key: 'k1' }, // accepted
  { user: 'a', voucher: 'open', key: 'k1' }, // replayed: the key repeated inside the batch is one order
  { user: 'a', voucher: 'open' }, // already bought
  { user: 'a', voucher: 'open', key: 'k0' }, // replayed: the key's order from before the batch
  { user: 'b', voucher: 'open', mode: 'hold' }, // accepted and held (sync strategy), the last unit
  { user: 'c', voucher: 'open' }, // sold out
  { user: 'c', voucher: 'open', key: 'k3' }, // sold out (a refused key keeps no order)
  { user: 'c', voucher: 'open', key: 'k3' }, // sold out again, not replayed
  { user: 'd', voucher: 'paused' }, // suspended
  { user: 'd', voucher: 'early' }, // not started
  { user: 'd', voucher: 'late' }, // ended
  { user: 'd', voucher: 'frozen' }, // frozen
  { user: 'e', voucher: 'twoPerUser' }, // accepted, slot 1
  { user: 'e', voucher: 'twoPerUser', key: 'k5' }, // accepted, slot 2
  { user: 'e', voucher: 'twoPerUser' }, // already bought (limit 2)
  { user: 'f', voucher: 'unpublished' }, // published from MySQL, decided again: accepted
];

/** A run's users, order ids and keys, distinct from the other run's. */
function requestsOf(run: number, world: World): Array<{ order: OrderRequest; mode: ReserveMode }> {
  return SEQUENCE.map((step, index) => {
    const order: OrderRequest = { orderId: String(run * 1_000 + index), userId: `${run}${step.user.charCodeAt(0)}`, voucherId: world[step.voucher] };
    if (step.key !== undefined) order.idempotencyKey = `${run}-${step.key}`;
    return { order, mode: step.mode ?? 'stream' };
  });
}

/** An order placed before the sequence under key k0 (user a, voucher open); its id is run * 1000 + 999. */
async function placeEarlierKeyedOrder(sale: Sale, run: number, world: World): Promise<void> {
  const order = { orderId: String(run * 1_000 + 999), userId: `${run}${'a'.charCodeAt(0)}`, voucherId: world.open, idempotencyKey: `${run}-k0` };
  // Accepted and then released: the key keeps its order, the user's slot and the unit are free again.
  const result = await sale.decider.decide(order);
  expect(result).toMatchObject({ outcome: 'accepted' });
  await sale.settlement.release({ ...order, slot: 1 });
}

/** What a run decided and left, with its ids made relative to the run so two runs compare. */
async function outcomeOf(run: number, world: World, results: ReserveResult[]) {
  const local = (orderId: string) => Number(orderId) - run * 1_000;
  const vouchers = Object.keys(world) as Array<keyof World>;
  const nameOf = (voucherId: string) => vouchers.find((name) => world[name] === voucherId);
  const decided = results.map((result) => {
    if (result.outcome === 'accepted') return { outcome: result.outcome, slot: result.slot };
    if (result.outcome === 'replayed') return { outcome: result.outcome, order: local(result.orderId) };
    return result;
  });
  const state: Record<string, unknown> = {};
  for (const name of vouchers) {
    const { voucher, buyers } = keys.voucher(world[name]);
    state[name] = { stock: await env.redis.hget(voucher, 'stock'), buyers: Object.values(await env.redis.hgetall(buyers)) };
  }
  const { stream, queued, inFlight } = keys.shard(0);
  const streamed = ordersOfEntries(await env.redis.xrange(stream, '-', '+'))
    .filter((entry) => nameOf(entry.voucherId) !== undefined)
    .map((entry) => ({ order: local(entry.orderId), voucher: nameOf(entry.voucherId), slot: String(entry.slot) }));
  const queuedOrders = Object.entries(await env.redis.hgetall(queued))
    .filter(([, value]) => nameOf(value.split(':')[1]!) !== undefined)
    .map(([orderId, value]) => [local(orderId), nameOf(value.split(':')[1]!), value.split(':')[2]])
    .sort((x, y) => Number(x[0]) - Number(y[0]));
  const held = (await env.redis.zrange(inFlight, 0, -1)).map(local).filter((order) => order >= 0 && order < 1_000);
  return { decided, state, streamed, queuedOrders, held };
}

/** Holds the relay's answers back right after the next call that names the shard's stream is sent. */
async function holdNextCall(send: () => unknown): Promise<void> {
  const stalled = relay.stallAfter(':orders');
  send();
  await stalled;
}

const storeOptions = (more: SaleOptions = {}): SaleOptions => ({ source: (voucherId) => new VoucherRepository(env.db).findSale(voucherId), ...more });

describe('decisions in batches (reserve.lua over many orders)', () => {
  it('decides a batch of mixed outcomes exactly as the same orders decided one at a time', async () => {
    // One at a time: every order sent alone, after the previous one's answer.
    const single = buildSale(env.redis, keys, storeOptions());
    const singleWorld = await saleWorld(single);
    await placeEarlierKeyedOrder(single, 1, singleWorld);
    const singleResults: ReserveResult[] = [];
    for (const { order, mode } of requestsOf(1, singleWorld)) singleResults.push(await single.decider.decide(order, mode));

    // In one batch: the first call (a warm-up order) is held, every order of the sequence arrives meanwhile.
    const sizes: number[] = [];
    const batched = buildSale(relayed, keys, storeOptions({ maxBatch: 64, onBatch: (size) => sizes.push(size) }));
    const batchedWorld = await saleWorld(batched);
    await placeEarlierKeyedOrder(batched, 2, batchedWorld);
    const warmUpVoucher = await insertSeckillVoucher(env, { stock: 1 });
    await batched.publisher.publish({ voucherId: warmUpVoucher, stock: 1, begin: new Date(Date.now() - HOUR), end: new Date(Date.now() + HOUR) });
    sizes.length = 0;
    let warmUp: Promise<ReserveResult> | undefined;
    await holdNextCall(() => (warmUp = batched.batches.reserve({ orderId: '2998', userId: '2998', voucherId: warmUpVoucher })));
    const pending = requestsOf(2, batchedWorld).map(({ order, mode }) => batched.decider.decide(order, mode));
    relay.resume();
    expect(await warmUp).toMatchObject({ outcome: 'accepted' });
    const batchedResults = await Promise.all(pending);
    // The warm-up alone, the sequence in one call, then the order of the unpublished voucher
    // decided again (after its publish).
    expect(sizes.slice(0, 2)).toEqual([1, SEQUENCE.length]);
    expect(sizes.reduce((sum, size) => sum + size, 0)).toBe(1 + SEQUENCE.length + 1);

    const expected = await outcomeOf(1, singleWorld, singleResults);
    expect(expected.decided.map((result) => result.outcome)).toEqual([
      'accepted',
      'replayed',
      'already-bought',
      'replayed',
      'accepted',
      'sold-out',
      'sold-out',
      'sold-out',
      'suspended',
      'not-started',
      'ended',
      'frozen',
      'accepted',
      'accepted',
      'already-bought',
      'accepted',
    ]);
    expect(expected.decided[1]).toEqual({ outcome: 'replayed', order: 0 });
    expect(expected.decided[3]).toEqual({ outcome: 'replayed', order: 999 });
    expect(expected.held).toEqual([4]);
    expect(await outcomeOf(2, batchedWorld, batchedResults)).toEqual(expected);
  });

  it('answers every order of a batch whose answer never comes "outcome unknown" (503), never a refusal', async () => {
    const timing = relayedRedis(500);
    try {
      await timing.ping();
      const sale = buildSale(timing, keys, { maxBatch: 64 });
      const voucherId = await insertSeckillVoucher(env, { stock: 10 });
      await sale.publisher.publish({ voucherId, stock: 10, begin: new Date(Date.now() - HOUR), end: new Date(Date.now() + HOUR) });
      const order = (n: number): OrderRequest => ({ orderId: String(5_000 + n), userId: String(5_000 + n), voucherId });
      let first: Promise<unknown> | undefined;
      await holdNextCall(() => (first = sale.decider.decide(order(0)).catch((error: unknown) => error)));
      const batch = [1, 2, 3, 4, 5].map((n) => sale.decider.decide(order(n)).catch((error: unknown) => error));
      // The held answer comes; the batch goes out at once and its answer is held in turn.
      const batchSent = relay.stallAfter(':orders');
      relay.resume();
      await batchSent;
      expect(await first).toMatchObject({ outcome: 'accepted' });
      const errors = await Promise.all(batch);
      errors.forEach((error, index) => {
        expect(error).toBeInstanceOf(OutcomeUnknown);
        expect(statusOf(error)).toBe(503);
        expect((error as OutcomeUnknown).message).toContain(order(index + 1).orderId);
      });
      relay.resume();
      // Redis did decide them: each was accepted, which a refusal would have denied.
      const { queued } = keys.voucher(voucherId);
      for (const n of [1, 2, 3, 4, 5]) expect(await env.redis.hget(queued, order(n).orderId)).toMatch(new RegExp(`^${order(n).userId}:${voucherId}:1:\\d+$`));
      expect(await env.redis.hget(keys.voucher(voucherId).voucher, 'stock')).toBe('4');
    } finally {
      relay.resume();
      await closeRedis(timing);
    }
  });

  it('keeps the arrival order inside a batch: the last unit goes to the first to ask', async () => {
    const sale = buildSale(relayed, keys, { maxBatch: 64 });
    const voucherId = await insertSeckillVoucher(env, { stock: 3 });
    await sale.publisher.publish({ voucherId, stock: 3, begin: new Date(Date.now() - HOUR), end: new Date(Date.now() + HOUR) });
    let first: Promise<ReserveResult> | undefined;
    await holdNextCall(() => (first = sale.batches.reserve({ orderId: '6000', userId: '6000', voucherId })));
    const rest = Array.from({ length: 10 }, (_, n) => sale.batches.reserve({ orderId: String(6_001 + n), userId: String(6_001 + n), voucherId }));
    relay.resume();
    expect(await first).toMatchObject({ outcome: 'accepted' });
    expect((await Promise.all(rest)).map(({ outcome }) => outcome)).toEqual(['accepted', 'accepted', ...Array<string>(8).fill('sold-out')]);
  });

  it('caps a batch at SECKILL_RESERVE_BATCH_MAX orders; the rest go in the next call', async () => {
    const sizes: number[] = [];
    const sale = buildSale(relayed, keys, { maxBatch: 4, onBatch: (size) => sizes.push(size) });
    const voucherId = await insertSeckillVoucher(env, { stock: 100 });
    await sale.publisher.publish({ voucherId, stock: 100, begin: new Date(Date.now() - HOUR), end: new Date(Date.now() + HOUR) });
    let first: Promise<ReserveResult> | undefined;
    await holdNextCall(() => (first = sale.batches.reserve({ orderId: '7000', userId: '7000', voucherId })));
    const rest = Array.from({ length: 10 }, (_, n) => sale.batches.reserve({ orderId: String(7_001 + n), userId: String(7_001 + n), voucherId }));
    relay.resume();
    await first;
    expect((await Promise.all(rest)).every(({ outcome }) => outcome === 'accepted')).toBe(true);
    expect(sizes).toEqual([1, 4, 4, 2]);
  });

  it("writes a batch per voucher once (its stock, its buyers' slots) and its queued orders in one HSET", async () => {
    // A redis-server of its own, behind a relay of its own: INFO commandstats then counts this batch alone.
    const server = await startRedisServer();
    const ownRelay = await stallingRelay(server.port);
    const direct = new Redis(server.url, { keyPrefix: env.config.redisKeyPrefix });
    const through = createRedis(
      { ...env.config, redisUrl: `redis://127.0.0.1:${ownRelay.port}/0`, deadlines: { redisCommandMs: 60_000 } },
      { onError: () => undefined },
    );
    try {
      const sale = buildSale(through, keys, { maxBatch: 64 });
      const voucherId = await insertSeckillVoucher(env, { stock: 100 });
      await sale.publisher.publish({ voucherId, stock: 100, begin: new Date(Date.now() - HOUR), end: new Date(Date.now() + HOUR) });
      const warmUpVoucher = await insertSeckillVoucher(env, { stock: 2 });
      await sale.publisher.publish({ voucherId: warmUpVoucher, stock: 2, begin: new Date(Date.now() - HOUR), end: new Date(Date.now() + HOUR) });
      expect(await sale.batches.reserve({ orderId: '7999', userId: '7999', voucherId: warmUpVoucher })).toMatchObject({ outcome: 'accepted' }); // the script loaded
      const scriptRuns = async () => (await commandCalls(direct)).evalsha ?? 0;
      const before = await scriptRuns();

      // The next call is held after Redis ran it; the 20 orders sent meanwhile go together in the one after it.
      const stalled = ownRelay.stallAfter(':orders');
      const first = sale.batches.reserve({ orderId: '8000', userId: '8000', voucherId: warmUpVoucher });
      await stalled;
      await expect.poll(scriptRuns).toBe(before + 1);
      const held = await commandCalls(direct);
      const orderIds = Array.from({ length: 20 }, (_, n) => String(8_001 + n));
      const batch = orderIds.map((orderId) => sale.batches.reserve({ orderId, userId: orderId, voucherId }));
      ownRelay.resume();
      expect(await first).toMatchObject({ outcome: 'accepted' });
      expect((await Promise.all(batch)).every(({ outcome }) => outcome === 'accepted')).toBe(true);
      const after = await commandCalls(direct);
      const ran = Object.fromEntries(
        Object.keys(after)
          .map((name) => [name, after[name]! - (held[name] ?? 0)])
          .filter(([, calls]) => calls !== 0),
      );
      expect(ran).toEqual({
        evalsha: 1, // one script run for the 20 orders
        time: 1, // the batch's one clock reading
        hmget: 2, // the voucher's fields, the batch's buyers' slots
        hincrby: 1, // the stock, once for 20 units
        pexpireat: 1,
        hset: 2, // the buyers' slots, the queued orders
        zadd: 1, // the queued orders by user
        xadd: 1, // one stream entry for the batch's 20 orders
      });
      expect(await direct.hget(keys.voucher(voucherId).voucher, 'stock')).toBe('80');
    } finally {
      ownRelay.resume();
      await closeRedis(through);
      direct.disconnect();
      await ownRelay.close();
      await server.kill();
    }
  });
});

/** Calls per command so far (INFO commandstats; INFO itself left out). */
async function commandCalls(redis: Redis): Promise<Record<string, number>> {
  const calls: Record<string, number> = {};
  for (const [, name = '', count = '0'] of (await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    if (name !== 'info') calls[name] = Number(count);
  return calls;
}

describe('batching in the app', () => {
  let app: FastifyInstance;

  beforeAll(async () => {
    app = (await buildTestApp(env)).app;
  });

  afterAll(async () => {
    await app?.close();
  });

  it('counts every decided order once in seckill_reserve_batch_size, and concurrent buyers get one order each', async () => {
    const scrape = async () => (await app.inject({ url: '/metrics', headers: metricsAuth })).body;
    const read = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
    const before = await scrape();
    const users = await createUsersWithSessions(env, 60, 16_000_000_000);
    const voucherId = await insertSeckillVoucher(env, { stock: 60 });
    const responses = await Promise.all(users.map((user) => buy(app, user.token, voucherId)));
    const bodies = responses.map((response) => response.json<{ success: boolean }>());
    expect(bodies.filter((body) => body.success)).toHaveLength(60);
    const after = await scrape();
    // Every request reached reserve.lua once (the unpublished voucher: one more for the first
    // batch, decided again after the publish); how the orders were grouped is the load's.
    const orders = read(after, 'seckill_reserve_batch_size_sum') - read(before, 'seckill_reserve_batch_size_sum');
    const calls = read(after, 'seckill_reserve_batch_size_count') - read(before, 'seckill_reserve_batch_size_count');
    expect(orders).toBeGreaterThanOrEqual(60);
    expect(calls).toBeGreaterThanOrEqual(1);
    expect(calls).toBeLessThanOrEqual(orders);
  });
});
