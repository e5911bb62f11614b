/**
 * An administrator's controls of a voucher sold from B = 3 buckets (docs/flows/seckill-buckets.md),
 * on real Redis and MariaDB: pause and resume, the window and the per-user limit reach every
 * bucket before the control answers; a raise adds units to the buckets (bumping their versions, so
 * a sold-out voucher sells again); a lower takes only unsold units from the buckets' stock, never
 * pending ones, and is refused below what is sold; a control cut midway converges on its retry;
 * the voucher list shows the buckets' live stock. Orders are placed through a second sale store (as
 * another instance would), by buyers chosen to home to each bucket.
 */
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSeckill } from '../../../../src/modules/seckill/index.js';
import { homeBucket, type BucketRef } from '../../../../src/modules/seckill/keys.js';
import { defineSaleScripts } from '../../../../src/modules/seckill/sale/sale-scripts.js';
import type { ReserveResult } from '../../../../src/modules/seckill/types.js';
import { eventually } from '../../../support/eventually.js';
import { buildTestApp, createTestEnv, sessionOf, type TestEnv } from '../../../support/test-env.js';
import { HOUR, insertSeckillVoucher, mysqlOrders, mysqlStock, statusOf, soldOutMemoryOf } from '../../../support/seckill.js';

let env: TestEnv;
let seckill: ReturnType<typeof buildSeckill>;
let app: FastifyInstance;
let admin: { authorization: string };
let nextUser = 6_000_000;
let nextOrder = 9_500_000_000;
const B = 3;
const SHOP = '31';

beforeAll(async () => {
  env = await createTestEnv({ SECKILL_MAX_BUCKETS: '8' });
  await env.db.insertInto('tb_shop').values({ id: SHOP, name: 'shop', type_id: '1', address: 'road 1', x: 120.15, y: 30.33 }).execute();
  seckill = buildSeckill({ config: env.config, redis: env.redis, db: env.db, consumerName: 'bucket-controls', log: pino({ level: 'silent' }) });
  app = (await buildTestApp(env)).app;
  admin = await sessionOf(env, '999001', 'admin');
});

afterAll(async () => {
  await app?.close();
  await seckill?.close();
  await env?.cleanup();
});

/** A sale of `stock` units over B buckets, published to Redis as its creation does. */
async function bucketedSale(stock: number, { limit = 1, begin = new Date(Date.now() - HOUR) } = {}): Promise<string> {
  const voucherId = await insertSeckillVoucher(env, { stock, shopId: SHOP, begin });
  await env.db.updateTable('tb_seckill_voucher').set({ buckets: B, limit_per_user: limit, total_stock: stock }).where('voucher_id', '=', voucherId).execute();
  const sale = await env.db.selectFrom('tb_seckill_voucher').selectAll().where('voucher_id', '=', voucherId).executeTakeFirstOrThrow();
  await seckill.sale.publisher.publish({ voucherId, stock, begin: sale.begin_time, end: sale.end_time, total: stock, limitPerUser: limit, buckets: B });
  return voucherId;
}

/** A new user id homing to `bucket` of B. */
function userOf(bucket: number): string {
  for (;;) {
    const userId = String(nextUser++);
    if (homeBucket(userId, B) === bucket) return userId;
  }
}
/** One new user per bucket. */
const oneUserPerBucket = (): string[] => [0, 1, 2].map(userOf);

/** An order as a client places it: a 503 (units still moving between buckets) is retried. */
async function place(voucherId: string, userId: string): Promise<ReserveResult> {
  const request = { orderId: String(nextOrder++), userId, voucherId };
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await seckill.sale.decider.decide(request);
    } catch (error) {
      if (statusOf(error) !== 503 || attempt === 20) throw error;
    }
  }
}
const outcomes = async (voucherId: string, users: string[]): Promise<string[]> =>
  (await Promise.all(users.map((userId) => place(voucherId, userId)))).map(({ outcome }) => outcome);

const bucketKey = (voucherId: string, index: number) => seckill.keys.bucket(voucherId, { index, of: B }).voucher;

interface Bucket {
  stock: number;
  pending: number;
  total: number;
  restocks: string;
}
async function buckets(voucherId: string): Promise<Bucket[]> {
  return Promise.all(
    [0, 1, 2].map(async (index) => {
      const [stock, pending, total, restocks] = await env.redis.hmget(bucketKey(voucherId, index), 'stock', 'pending', 'total', 'restocks');
      return { stock: Number(stock), pending: Number(pending ?? 0), total: Number(total), restocks: restocks ?? '' };
    }),
  );
}
const unitsLeft = async (voucherId: string) => (await buckets(voucherId)).reduce((sum, bucket) => sum + bucket.stock + bucket.pending, 0);
const redisTotal = async (voucherId: string) => (await buckets(voucherId)).reduce((sum, bucket) => sum + bucket.total, 0);

const control = (voucherId: string, action: 'pause' | 'resume') =>
  app.inject({ method: 'POST', url: `/api/voucher/seckill/${voucherId}/${action}`, headers: admin });
const patch = (voucherId: string, payload: object) => app.inject({ method: 'PATCH', url: `/api/voucher/seckill/${voucherId}`, headers: admin, payload });

/** MySQL holds exactly the accepted orders, and its stock, Redis's units and the total agree: total = sold + units left. */
async function expectBalanced(voucherId: string, accepted: number, total: number): Promise<void> {
  await eventually(async () => {
    await seckill.worker.drainOnce();
    expect(await mysqlOrders(env, voucherId)).toHaveLength(accepted);
  });
  expect(await mysqlStock(env, voucherId)).toBe(total - accepted);
  expect(await unitsLeft(voucherId)).toBe(total - accepted);
  expect(await redisTotal(voucherId)).toBe(total);
  const row = await env.db.selectFrom('tb_seckill_voucher').select('total_stock').where('voucher_id', '=', voucherId).executeTakeFirstOrThrow();
  expect(row.total_stock).toBe(total);
}

describe('sale controls of a voucher sold from 3 buckets', () => {
  it('pause refuses orders in every bucket once it answered, resume sells in every bucket again', async () => {
    const voucherId = await bucketedSale(30);
    const paused = await control(voucherId, 'pause');
    expect(paused.json()).toMatchObject({ success: true, data: { paused: true, stock: 30, left: 30, changed: true, buckets: B } });
    expect(await outcomes(voucherId, oneUserPerBucket())).toEqual(['suspended', 'suspended', 'suspended']);
    expect((await control(voucherId, 'pause')).json().data.changed).toBe(false);

    expect((await control(voucherId, 'resume')).json().data).toMatchObject({ paused: false, changed: true });
    expect(await outcomes(voucherId, oneUserPerBucket())).toEqual(['accepted', 'accepted', 'accepted']);
    await expectBalanced(voucherId, 3, 30);
  });

  it('moves the window in every bucket and the layout: not begun, then open, then ended now', async () => {
    const voucherId = await bucketedSale(9);
    const later = new Date(Date.now() + HOUR);
    const moved = await patch(voucherId, { beginTime: later.toISOString(), endTime: new Date(Date.now() + 2 * HOUR).toISOString() });
    expect(moved.json().success).toBe(true);
    expect(await outcomes(voucherId, oneUserPerBucket())).toEqual(['not-started', 'not-started', 'not-started']);
    const layout = await env.redis.hget(seckill.keys.voucher(voucherId).voucher, 'begin');
    expect(Number(layout)).toBe(Math.floor(later.getTime() / 1000) * 1000);

    expect((await patch(voucherId, { beginTime: new Date(Date.now() - 60_000).toISOString() })).json().success).toBe(true);
    expect(await outcomes(voucherId, oneUserPerBucket())).toEqual(['accepted', 'accepted', 'accepted']);

    const ended = (await patch(voucherId, { endTime: new Date().toISOString() })).json().data as { endTime: string };
    expect(await outcomes(voucherId, oneUserPerBucket())).toEqual(['ended', 'ended', 'ended']);
    const end = Date.parse(ended.endTime);
    for (const index of [0, 1, 2]) expect(Number(await env.redis.hget(bucketKey(voucherId, index), 'end'))).toBe(end);
    expect(Number(await env.redis.hget(seckill.keys.voucher(voucherId).voucher, 'end'))).toBe(end);
    // The keys now expire a week after the new end, not the old one.
    expect(await env.redis.pttl(bucketKey(voucherId, 1))).toBeLessThan(7 * 24 * HOUR + 60_000);
  });

  it('a lowered limit stops buyers who hold it in every bucket, and a raised one lets them buy again', async () => {
    const voucherId = await bucketedSale(30, { limit: 2 });
    const users = oneUserPerBucket();
    expect(await outcomes(voucherId, users)).toEqual(['accepted', 'accepted', 'accepted']);
    expect((await patch(voucherId, { limitPerUser: 1 })).json().data).toMatchObject({ limitPerUser: 1, changed: true });
    expect(await outcomes(voucherId, users)).toEqual(['already-bought', 'already-bought', 'already-bought']);
    for (const index of [0, 1, 2]) expect(await env.redis.hget(bucketKey(voucherId, index), 'limit')).toBe('1');
    expect((await patch(voucherId, { limitPerUser: 2 })).json().success).toBe(true);
    expect(await outcomes(voucherId, users)).toEqual(['accepted', 'accepted', 'accepted']);
    await expectBalanced(voucherId, 6, 30);
  });

  it('a raise splits its units over the buckets, bumps their versions, and a sold-out voucher sells again', async () => {
    const voucherId = await bucketedSale(6);
    const first = await outcomes(voucherId, [...oneUserPerBucket(), ...oneUserPerBucket(), ...oneUserPerBucket()]);
    expect(first.filter((outcome) => outcome === 'accepted')).toHaveLength(6);
    expect(first.filter((outcome) => outcome === 'sold-out')).toHaveLength(3);
    const { memory, near } = await soldOutMemoryOf(env, seckill);
    try {
      await memory.remember(voucherId);
      expect(memory.known(voucherId)).toBe(true);
      const versions = (await buckets(voucherId)).map(({ restocks }) => restocks);

      const raised = await patch(voucherId, { stock: 10 });
      expect(raised.json().data).toMatchObject({ stock: 10, left: 4, changed: true });
      const after = await buckets(voucherId);
      // 4 units over 3 buckets: 2, 1, 1 (the remainder to the lowest index), each a new version.
      expect(after.map(({ stock }) => stock)).toEqual([2, 1, 1]);
      after.forEach(({ restocks }, index) => expect(restocks).not.toBe(versions[index]));
      await eventually(() => expect(memory.known(voucherId)).toBe(false));

      const second = await outcomes(voucherId, [...oneUserPerBucket(), ...oneUserPerBucket()]);
      expect(second.filter((outcome) => outcome === 'accepted')).toHaveLength(4);
      expect(second.filter((outcome) => outcome === 'sold-out')).toHaveLength(2);
      await expectBalanced(voucherId, 10, 10);
    } finally {
      await near.close();
    }
  });

  it('a lower below what is sold is refused and changes nothing; one above takes unsold units only', async () => {
    const voucherId = await bucketedSale(12);
    expect(await outcomes(voucherId, [...oneUserPerBucket(), userOf(0), userOf(1)])).toEqual(Array.from({ length: 5 }, () => 'accepted'));
    const below = await patch(voucherId, { stock: 4 });
    expect(below.statusCode).toBe(400);
    expect(below.json().errorMsg).toMatch(/5 units are sold or queued/);
    expect(await unitsLeft(voucherId)).toBe(7);
    expect(await redisTotal(voucherId)).toBe(12);
    expect(await mysqlStock(env, voucherId)).toBeGreaterThanOrEqual(7);

    expect((await patch(voucherId, { stock: 8 })).json().data).toMatchObject({ stock: 8, left: 3, changed: true });
    expect(await unitsLeft(voucherId)).toBe(3);
    const last = await outcomes(voucherId, [...oneUserPerBucket(), ...oneUserPerBucket()]);
    expect(last.filter((outcome) => outcome === 'accepted')).toHaveLength(3);
    expect(last.filter((outcome) => outcome === 'sold-out')).toHaveLength(3);
    // Lowered to exactly what is sold: nothing left to sell, nothing refused.
    expect((await patch(voucherId, { stock: 8 })).json().data).toMatchObject({ stock: 8, left: 0, changed: false });
    await expectBalanced(voucherId, 8, 8);
  });

  it("never takes a refill's pending units: a lower that needs them waits, then answers 503 and changes nothing", async () => {
    const voucherId = await bucketedSale(6);
    // A refill took bucket 0's 2 units for bucket 1 and died before its give.
    const donor: BucketRef = { index: 0, of: B };
    const scripts = defineSaleScripts(env.redis, seckill.keys);
    expect(await scripts.take({ voucherId, bucket: donor, transferId: 'dead-refill-control', to: 1, most: 64 })).toBe(1);
    expect((await buckets(voucherId)).map(({ stock, pending }) => [stock, pending])).toEqual([
      [1, 1],
      [2, 0],
      [2, 0],
    ]);
    // 5 units in stock, 1 pending: a lower to 0 needs the pending one.
    const busy = await patch(voucherId, { stock: 0 });
    expect(busy.statusCode).toBe(503);
    expect(busy.headers['retry-after']).toBeDefined();
    expect(await unitsLeft(voucherId)).toBe(6);
    expect(await redisTotal(voucherId)).toBe(6);
    expect(await mysqlStock(env, voucherId)).toBe(6);
    // Once swept, the unit is back in stock and the lower goes through.
    expect(await seckill.sale.transfers.sweep(0)).toBe(1);
    expect((await patch(voucherId, { stock: 0 })).json().data).toMatchObject({ stock: 0, left: 0, changed: true });
    expect(await outcomes(voucherId, oneUserPerBucket())).toEqual(['sold-out', 'sold-out', 'sold-out']);
    await expectBalanced(voucherId, 0, 0);
  });

  it('lowers while orders race in every bucket: no removed unit is sold, none is lost', async () => {
    const voucherId = await bucketedSale(60);
    const users = Array.from({ length: 30 }, () => oneUserPerBucket()).flat();
    const racing = outcomes(voucherId, users);
    const answers = [];
    for (const stock of [50, 40, 30]) answers.push(await patch(voucherId, { stock }));
    const placed = await racing;
    const accepted = placed.filter((outcome) => outcome === 'accepted').length;
    expect(placed.every((outcome) => outcome === 'accepted' || outcome === 'sold-out')).toBe(true);
    // A lower is applied whole or refused whole (400: orders sold past it meanwhile; 503: the units it needed stayed pending).
    expect(answers.filter((answer) => ![200, 400, 503].includes(answer.statusCode)).map((answer) => answer.body)).toEqual([]);
    const total = (await env.db.selectFrom('tb_seckill_voucher').select('total_stock').where('voucher_id', '=', voucherId).executeTakeFirstOrThrow())
      .total_stock!;
    expect(accepted).toBeLessThanOrEqual(total);
    await expectBalanced(voucherId, accepted, total);
  });

  it('a raise cut between buckets, or a lower cut before MySQL, converges on its retry', async () => {
    const voucherId = await bucketedSale(9);
    expect((await patch(voucherId, { stock: 15 })).json().data.left).toBe(15);
    // As if the instance died after MySQL and bucket 0: buckets 1 and 2 never got their 2 units.
    for (const index of [1, 2]) await env.redis.hincrby(bucketKey(voucherId, index), 'stock', -2);
    for (const index of [1, 2]) await env.redis.hincrby(bucketKey(voucherId, index), 'total', -2);
    expect(await redisTotal(voucherId)).toBe(11);
    expect((await patch(voucherId, { stock: 15 })).json().data).toMatchObject({ changed: false, left: 15 });
    expect(await redisTotal(voucherId)).toBe(15);

    // A lower to 12 that died after taking 2 units from bucket 0, before MySQL.
    await env.redis.hincrby(bucketKey(voucherId, 0), 'stock', -2);
    await env.redis.hincrby(bucketKey(voucherId, 0), 'total', -2);
    expect(await mysqlStock(env, voucherId)).toBe(15);
    expect((await patch(voucherId, { stock: 12 })).json().data).toMatchObject({ stock: 12, left: 12, changed: true });
    expect(await redisTotal(voucherId)).toBe(12);
    await expectBalanced(voucherId, 0, 12);
  });

  it("a sale published without the buckets' totals gets them from MySQL's total on its first control", async () => {
    const voucherId = await bucketedSale(9);
    expect(await outcomes(voucherId, oneUserPerBucket())).toEqual(['accepted', 'accepted', 'accepted']);
    for (const index of [0, 1, 2]) await env.redis.hdel(bucketKey(voucherId, index), 'total');
    const below = await patch(voucherId, { stock: 2 });
    expect(below.json().errorMsg).toMatch(/3 units are sold or queued/);
    expect(await redisTotal(voucherId)).toBe(9);
    expect((await patch(voucherId, { stock: 5 })).json().data).toMatchObject({ stock: 5, left: 2 });
    await expectBalanced(voucherId, 3, 5);
  });
});

describe('the voucher list of a bucketed sale', () => {
  it("shows the buckets' live stock, units pending between buckets counted as unsold", async () => {
    const voucherId = await bucketedSale(9);
    const listed = async () => {
      const response = await app.inject({ url: `/api/voucher/list/${SHOP}` });
      return (response.json().data as Array<{ id: string; stock?: number }>).find((voucher) => voucher.id === voucherId)?.stock;
    };
    expect(await listed()).toBe(9);
    expect(await outcomes(voucherId, [...oneUserPerBucket(), userOf(0)])).toEqual(['accepted', 'accepted', 'accepted', 'accepted']);
    // Orders are not in MySQL yet (no worker here): the list shows Redis's units, not MySQL's 9.
    await eventually(async () => expect(await listed()).toBe(5), 5_000);
    const scripts = defineSaleScripts(env.redis, seckill.keys);
    expect(await scripts.take({ voucherId, bucket: { index: 1, of: B }, transferId: 'list-refill', to: 0, most: 64 })).toBe(1);
    expect(await listed()).toBe(5);
    expect((await patch(voucherId, { stock: 12 })).json().success).toBe(true);
    await eventually(async () => expect(await listed()).toBe(8), 5_000);
    expect(await seckill.sale.transfers.sweep(0)).toBe(1);
  });
});
