/**
 * A voucher sold from B buckets (docs/flows/seckill-buckets.md) on real Redis and MariaDB: each
 * user's orders go to the user's home bucket; an empty bucket is refilled from the others (take,
 * give, settle), so every unit is sold and nobody reads "sold out" while a unit is left anywhere;
 * a refill that dies between its take and its give leaves its units pending until the sweep
 * returns them; the worker writes the bucket lanes' streams to MySQL.
 */
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSeckill } from '../../../../src/modules/seckill/index.js';
import { VoucherRepository } from '../../../../src/modules/seckill/record/voucher-repository.js';
import { homeBucket, type BucketRef } from '../../../../src/modules/seckill/keys.js';
import { readBuckets } from '../../../../src/modules/seckill/sale/transfers.js';
import { defineSaleScripts } from '../../../../src/modules/seckill/sale/sale-scripts.js';
import type { ReserveResult } from '../../../../src/modules/seckill/types.js';
import { createMetrics } from '../../../../src/infra/metrics.js';
import { REFUSALS, SECKILL_MESSAGES } from '../../../../src/modules/seckill/messages.js';
import { render } from '../../../../src/lib/messages/index.js';
import { eventually } from '../../../support/eventually.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, sessionOf, type TestEnv } from '../../../support/test-env.js';
import { HOUR, buy, insertSeckillVoucher, mysqlOrders, mysqlStock, statusOf, soldOutMemoryOf } from '../../../support/seckill.js';

let env: TestEnv;
let seckill: ReturnType<typeof buildSeckill>;
let app: FastifyInstance;
let admin: { authorization: string };
let nextUser = 5_000_000;

beforeAll(async () => {
  env = await createTestEnv({ SECKILL_MAX_BUCKETS: '8' });
  seckill = buildSeckill({ config: env.config, redis: env.redis, db: env.db, consumerName: 'buckets-test', log: pino({ level: 'silent' }) });
  app = (await buildTestApp(env)).app;
  admin = await sessionOf(env, '999001', 'admin');
});

afterAll(async () => {
  await app?.close();
  await seckill?.close();
  await env?.cleanup();
});

/** A sale of `stock` units over `buckets` buckets, in MySQL only: its first order publishes it. */
async function bucketedSale(stock: number, buckets: number, limit = 1): Promise<string> {
  const voucherId = await insertSeckillVoucher(env, { stock });
  await env.db.updateTable('tb_seckill_voucher').set({ buckets, limit_per_user: limit, total_stock: stock }).where('voucher_id', '=', voucherId).execute();
  return voucherId;
}

/** `count` new user ids whose home bucket of `buckets` is `bucket`. */
function usersHomingTo(bucket: number, buckets: number, count: number): string[] {
  const users: string[] = [];
  while (users.length < count) {
    const userId = String(nextUser++);
    if (homeBucket(userId, buckets) === bucket) users.push(userId);
  }
  return users;
}

let nextOrder = 9_000_000_000;
const order = (voucherId: string, userId: string, idempotencyKey?: string) => ({
  orderId: String(nextOrder++),
  userId,
  voucherId,
  ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
});

/** Units left anywhere: every bucket's stock and the units its refills have taken and not yet settled. */
async function unitsLeft(voucherId: string, buckets: number): Promise<number> {
  return (await readBuckets(env.redis, seckill.keys, voucherId, buckets)).reduce((sum, reading) => sum + reading.stock + reading.pending, 0);
}

/**
 * An order as a client places it: a 503 (units still moving between buckets after the store's
 * patience, which a busy machine can exhaust) is no answer, and the client retries it.
 */
async function placeRetrying(request: ReturnType<typeof order>): Promise<ReserveResult> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await seckill.sale.decider.decide(request);
    } catch (error) {
      if (statusOf(error) !== 503 || attempt === 20) throw error;
    }
  }
}

/** Every order placed at once; the outcomes by kind. */
async function placeAll(voucherId: string, users: string[]): Promise<{ results: ReserveResult[]; accepted: number; soldOut: number }> {
  const results = await Promise.all(users.map((userId) => placeRetrying(order(voucherId, userId))));
  return {
    results,
    accepted: results.filter(({ outcome }) => outcome === 'accepted').length,
    soldOut: results.filter(({ outcome }) => outcome === 'sold-out').length,
  };
}

/** What the worker wrote, against what the sale accepted (one order per user unless `buyers` says fewer). */
async function expectWritten(voucherId: string, accepted: number, stock: number, buyers = accepted): Promise<void> {
  // A pass reads one batch (SECKILL_WORKER_BATCH) of each stream: as many passes as the backlog needs.
  let orders = await mysqlOrders(env, voucherId);
  for (let pass = 0; pass < 10 && orders.length < accepted; pass += 1) {
    await seckill.worker.drainOnce();
    orders = await mysqlOrders(env, voucherId);
  }
  expect(orders).toHaveLength(accepted);
  expect(new Set(orders.map((row) => row.user_id)).size).toBe(buyers);
  expect(await mysqlStock(env, voucherId)).toBe(stock - accepted);
}

describe('a voucher sold from buckets', () => {
  it("keeps a voucher of one bucket in its shard's one hash, and splits one of three over three lanes", async () => {
    const single = await bucketedSale(10, 1);
    expect((await seckill.sale.decider.decide(order(single, '1'))).outcome).toBe('accepted');
    expect(await env.redis.hget(seckill.keys.voucher(single).voucher, 'stock')).toBe('9');
    expect(await env.redis.exists(seckill.keys.bucket(single, { index: 0, of: 3 }).voucher)).toBe(0);

    const split = await bucketedSale(10, 3);
    expect((await seckill.sale.decider.decide(order(split, '1'))).outcome).toBe('accepted');
    expect(await env.redis.hgetall(seckill.keys.voucher(split).voucher)).toMatchObject({ buckets: '3' });
    expect(await env.redis.hexists(seckill.keys.voucher(split).voucher, 'stock')).toBe(0);
    const stocks = (await readBuckets(env.redis, seckill.keys, split, 3)).map(({ stock }) => stock);
    const home = homeBucket('1', 3);
    expect(stocks).toEqual([4, 3, 3].map((share, index) => (index === home ? share - 1 : share)));
    await expectWritten(split, 1, 10);
  });

  it('sells every unit with demand above stock, refusing "sold out" only once nothing is left anywhere', async () => {
    const voucherId = await bucketedSale(90, 3);
    const users = [0, 1, 2].flatMap((bucket) => usersHomingTo(bucket, 3, 70));
    const { results, accepted, soldOut } = await placeAll(voucherId, users);
    expect(accepted).toBe(90);
    expect(soldOut).toBe(users.length - 90);
    expect(results.every(({ outcome }) => outcome === 'accepted' || outcome === 'sold-out')).toBe(true);
    expect(await unitsLeft(voucherId, 3)).toBe(0);
    await expectWritten(voucherId, 90, 90);
  });

  it('sells every unit when nine buyers in ten home to one bucket', async () => {
    const voucherId = await bucketedSale(120, 3);
    const users = [...usersHomingTo(0, 3, 270), ...usersHomingTo(1, 3, 15), ...usersHomingTo(2, 3, 15)];
    const { accepted } = await placeAll(voucherId, users);
    expect(accepted).toBe(120);
    expect(await unitsLeft(voucherId, 3)).toBe(0);
    await expectWritten(voucherId, 120, 120);
  });

  it('answers every buyer of a drained bucket from the others, one at a time, until the last unit (no false "sold out")', async () => {
    const voucherId = await bucketedSale(30, 3);
    expect(await seckill.sale.publisher.publish((await new VoucherRepository(env.db).findSale(voucherId))!)).toBe(true);
    // Every buyer homes to bucket 2: its 10 units, then the other buckets' 20 by refills.
    for (const userId of usersHomingTo(2, 3, 40)) {
      const left = await unitsLeft(voucherId, 3);
      const { outcome } = await seckill.sale.decider.decide(order(voucherId, userId));
      expect(outcome, `with ${left} units left`).toBe(left > 0 ? 'accepted' : 'sold-out');
    }
    expect(await unitsLeft(voucherId, 3)).toBe(0);
    await expectWritten(voucherId, 30, 30);
  });

  it("keeps the per-user limit and the Idempotency-Key in the user's home bucket", async () => {
    const voucherId = await bucketedSale(20, 3, 2);
    const [userId] = usersHomingTo(1, 3, 1) as [string];
    const first = await seckill.sale.decider.decide(order(voucherId, userId, 'key-1'));
    expect(first.outcome).toBe('accepted');
    const again = order(voucherId, userId, 'key-1');
    const [replayed, second, third] = await Promise.all([
      seckill.sale.decider.decide(again),
      seckill.sale.decider.decide(order(voucherId, userId)),
      seckill.sale.decider.decide(order(voucherId, userId)),
    ]);
    expect(replayed.outcome).toBe('replayed');
    expect([second.outcome, third.outcome].sort()).toEqual(['accepted', 'already-bought']);
    const home: BucketRef = { index: 1, of: 3 };
    expect(Number(await env.redis.hget(seckill.keys.bucket(voucherId, home).buyers, userId))).toBe(0b11);
    await expectWritten(voucherId, 2, 20, 1);
  });

  it('leaves the units of a refill that died between take and give pending, not lost, and the sweep returns them', async () => {
    const voucherId = await bucketedSale(12, 2);
    // Publish, then empty bucket 1 so that its buyers need refills from bucket 0.
    const [buyer1] = usersHomingTo(1, 2, 1) as [string];
    expect((await seckill.sale.decider.decide(order(voucherId, buyer1))).outcome).toBe('accepted');
    for (const userId of usersHomingTo(1, 2, 5)) expect((await seckill.sale.decider.decide(order(voucherId, userId))).outcome).toBe('accepted');
    // A refill of bucket 1 takes from bucket 0 and dies before its give.
    const donor: BucketRef = { index: 0, of: 2 };
    const scripts = defineSaleScripts(env.redis, seckill.keys);
    const taken = await scripts.take({ voucherId, bucket: donor, transferId: 'dead-refill', to: 1, most: 64 });
    expect(taken).toBe(3);
    const [stock0, stock1] = await readBuckets(env.redis, seckill.keys, voucherId, 2);
    expect([stock0!.stock, stock0!.pending, stock1!.stock]).toEqual([3, 3, 0]);
    // The 3 units left in bucket 0 sell; the 3 pending do not, and nobody reads "sold out" while they are pending.
    const buyers = usersHomingTo(1, 2, 6);
    const outcomes: string[] = [];
    for (const userId of buyers) {
      outcomes.push(
        await seckill.sale.decider.decide(order(voucherId, userId)).then(
          ({ outcome }) => outcome,
          (error: unknown) => `http ${statusOf(error) ?? 'none'}`,
        ),
      );
    }
    expect(outcomes.filter((outcome) => outcome === 'accepted')).toHaveLength(3);
    expect(outcomes.filter((outcome) => outcome === 'sold-out')).toHaveLength(0);
    expect(await unitsLeft(voucherId, 2)).toBe(3);
    // Too young for the sweep; then swept: the units back in bucket 0, and sold.
    expect(await seckill.sale.transfers.sweep()).toBe(0);
    expect(await seckill.sale.transfers.sweep(0)).toBe(1);
    expect(await seckill.sale.transfers.sweep(0)).toBe(0);
    const [after0] = await readBuckets(env.redis, seckill.keys, voucherId, 2);
    expect([after0!.stock, after0!.pending]).toEqual([3, 0]);
    const late = await placeAll(voucherId, usersHomingTo(1, 2, 5));
    expect(late.accepted).toBe(3);
    expect(await unitsLeft(voucherId, 2)).toBe(0);
    await expectWritten(voucherId, 12, 12);
  });

  it('answers a buyer whose units are all pending 503 "retry in a moment" before the request deadline, not "outcome unknown"', async () => {
    const voucherId = await bucketedSale(8, 2);
    await seckill.sale.publisher.publish((await new VoucherRepository(env.db).findSale(voucherId))!);
    // Every unit taken by a refill that never gives (its instance died): all pending, none for sale, none sold.
    for (const [from, to] of [
      [0, 1],
      [1, 0],
    ] as const) {
      while ((await seckill.sale.transfers.takeAndAbandon(voucherId, { index: from, of: 2 }, { index: to, of: 2 })) > 0);
    }
    expect(await unitsLeft(voucherId, 2)).toBe(8);
    const [buyer] = usersHomingTo(0, 2, 1) as [string];
    // An instance with the default request deadline (the suite's is a minute).
    const deadlines = { ...env.config.deadlines, requestMs: 2_000 };
    const { app: deadlined } = await buildTestApp({ ...env, config: { ...env.config, deadlines } }, undefined, { consumerName: 'buckets-deadline' });
    try {
      const startedAt = Date.now();
      const answer = await buy(deadlined, (await sessionOf(env, buyer)).authorization, voucherId);
      // The store gives up refilling before the request deadline answers for it: the buyer learns
      // that nothing was placed and to retry, rather than that the outcome is unknown.
      expect(answer.json<{ errorMsg: string }>().errorMsg).toBe(render(SECKILL_MESSAGES.bucketsRefilling(), 'en'));
      expect(answer.statusCode).toBe(503);
      expect(answer.headers['retry-after']).toBeDefined();
      expect(Date.now() - startedAt).toBeLessThan(deadlines.requestMs);
    } finally {
      await deadlined.close();
    }
    // The units come back only by the sweep (its records must be 10 s old: swept now, as if they were).
    expect(await seckill.sale.transfers.sweep(0)).toBeGreaterThan(0);
    expect(await unitsLeft(voucherId, 2)).toBe(8);
  });

  it('gives a released unit back to the bucket that sold it, and the sold-out memory drops its flag when a version moves', async () => {
    const voucherId = await bucketedSale(4, 2);
    const users = [...usersHomingTo(0, 2, 3), ...usersHomingTo(1, 2, 3)];
    const { results } = await placeAll(voucherId, users);
    expect(results.filter(({ outcome }) => outcome === 'accepted')).toHaveLength(4);
    const { memory, near } = await soldOutMemoryOf(env, seckill);
    await memory.remember(voucherId);
    expect(memory.known(voucherId)).toBe(true);
    const index = results.findIndex(({ outcome }) => outcome === 'accepted');
    const sold = results[index] as { outcome: 'accepted'; slot: number };
    const userId = users[index]!;
    const queued = await seckill.sale.reads.queuedOfUser(userId);
    expect(queued).toHaveLength(1);
    expect(await seckill.sale.settlement.release({ orderId: queued[0]!.orderId, userId, voucherId, slot: sold.slot })).toBe(true);
    const home = homeBucket(userId, 2);
    expect((await readBuckets(env.redis, seckill.keys, voucherId, 2))[home]!.stock).toBe(1);
    await eventually(() => expect(memory.known(voucherId)).toBe(false));
    await near.close();
  });
});

describe('a bucketed sale through the order route', () => {
  it('answers every buyer on two instances: as many orders as units, the rest "Sold out", refused from memory once sold out, all written', async () => {
    const voucherId = await bucketedSale(20, 3);
    const buyers = await createUsersWithSessions(env, 60, 16_000_000_000);
    const metrics = createMetrics();
    const apps = [app, (await buildTestApp(env, undefined, { consumerName: 'buckets-b', metrics })).app];
    try {
      // A 503 with Retry-After (units still moving after the store's patience, on a busy machine) is retried, as a client does.
      const buyRetrying = async (on: FastifyInstance, token: string) => {
        for (let attempt = 1; ; attempt += 1) {
          const answer = await buy(on, token, voucherId);
          if (answer.statusCode !== 503 || attempt === 20) return answer;
        }
      };
      const answers = await Promise.all(buyers.map((buyer, index) => buyRetrying(apps[index % 2]!, buyer.token)));
      expect(answers.every((answer) => answer.statusCode === 200)).toBe(true);
      const bodies = answers.map((answer) => answer.json<{ success: boolean; errorMsg?: string }>());
      expect(bodies.filter((body) => body.success)).toHaveLength(20);
      expect(bodies.filter((body) => !body.success).map((body) => body.errorMsg)).toEqual(Array.from({ length: 40 }, () => REFUSALS.soldOut));
      // Every bucket empty and nothing pending: the instance flags the voucher and refuses from memory.
      const knownRefusals = async () => (await metrics.seckillRequests.get()).values.find((value) => value.labels.outcome === 'sold-out-known')?.value ?? 0;
      await eventually(async () => {
        expect((await buy(apps[1]!, buyers[1]!.token, voucherId)).json()).toMatchObject({ success: false, errorMsg: REFUSALS.soldOut });
        expect(await knownRefusals()).toBeGreaterThan(0);
      }, 5_000);
      expect(await unitsLeft(voucherId, 3)).toBe(0);
      await expectWritten(voucherId, 20, 20);
    } finally {
      await apps[1]!.close();
    }
  });

  it("holds a sync order in its home bucket's lane, and settles it there", async () => {
    const voucherId = await bucketedSale(5, 2);
    const [userId] = usersHomingTo(1, 2, 1) as [string];
    const held = order(voucherId, userId);
    const result = await seckill.sale.decider.decide(held, 'hold');
    expect(result.outcome).toBe('accepted');
    const lane = seckill.keys.bucket(voucherId, { index: 1, of: 2 });
    expect(await env.redis.zscore(lane.inFlight, held.orderId)).not.toBeNull();
    await seckill.sale.settlement.settle({ ...held, slot: 1 });
    expect(await env.redis.zscore(lane.inFlight, held.orderId)).toBeNull();
    expect(await env.redis.hexists(lane.queued, held.orderId)).toBe(0);
  });
});

describe('the buckets of a sale, set by an administrator', () => {
  const create = (body: object) =>
    app.inject({
      method: 'POST',
      url: '/api/voucher/seckill',
      headers: admin,
      payload: { shopId: '1', title: 'hot', payValue: 100, actualValue: 200, stock: 30, ...body },
    });
  const patch = (voucherId: string, payload: object) => app.inject({ method: 'PATCH', url: `/api/voucher/seckill/${voucherId}`, headers: admin, payload });

  it('creates a sale of B buckets (MySQL and Redis), refuses B out of 1..8, and changes B until 10 s before the begin', async () => {
    await env.db.insertInto('tb_shop').values({ id: '1', name: 'shop', type_id: '1', address: 'road 1', x: 120.15, y: 30.33 }).execute();
    const begin = new Date(Date.now() + HOUR);
    const end = new Date(Date.now() + 2 * HOUR);
    const created = await create({ beginTime: begin.toISOString(), endTime: end.toISOString(), buckets: 3 });
    expect(created.json()).toMatchObject({ success: true });
    const voucherId = created.json().data as string;
    expect((await env.db.selectFrom('tb_seckill_voucher').select('buckets').where('voucher_id', '=', voucherId).executeTakeFirstOrThrow()).buckets).toBe(3);
    expect(await env.redis.hget(seckill.keys.voucher(voucherId).voucher, 'buckets')).toBe('3');
    expect((await create({ beginTime: begin.toISOString(), endTime: end.toISOString(), buckets: 9 })).statusCode).toBe(400);

    const toTwo = await patch(voucherId, { buckets: 2 });
    expect(toTwo.json()).toMatchObject({ success: true, data: { buckets: 2, changed: true } });
    expect(await env.redis.hget(seckill.keys.voucher(voucherId).voucher, 'buckets')).toBe('2');
    expect((await readBuckets(env.redis, seckill.keys, voucherId, 2)).map(({ stock }) => stock)).toEqual([15, 15]);
    expect(await env.redis.exists(seckill.keys.bucket(voucherId, { index: 2, of: 3 }).voucher)).toBe(0);
    const toOne = await patch(voucherId, { buckets: 1 });
    expect(toOne.json()).toMatchObject({ success: true, data: { buckets: 1 } });
    expect(await env.redis.hget(seckill.keys.voucher(voucherId).voucher, 'stock')).toBe('30');
    expect((await patch(voucherId, { buckets: 2, stock: 40 })).statusCode).toBe(400);
  });

  it('refuses a change of B once the sale is about to begin, with a 409', async () => {
    const voucherId = await bucketedSale(10, 3);
    const fixed = await patch(voucherId, { buckets: 2 });
    expect(fixed.statusCode).toBe(409);
    expect(fixed.json().errorMsg).toMatch(/buckets can change only until/);
    // The purchase gate lives in MySQL alone: it changes for a bucketed sale too.
    expect((await patch(voucherId, { purchaseGate: 'token' })).json()).toMatchObject({ success: true, data: { purchaseGate: 'token', buckets: 3 } });
  });
});
