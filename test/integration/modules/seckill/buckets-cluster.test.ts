/**
 * A voucher sold from buckets on a real Redis Cluster of 3 masters (kit/redis-cluster.ts): its B
 * buckets' keys land on B different masters, each reserve.lua call touches one slot, and a sale
 * with demand above stock (nine buyers in ten homing to one bucket) sells every unit, none twice
 * to a user and none answered "sold out" while a unit was left, with MySQL holding exactly the
 * accepted orders once the worker has drained the lanes; the reconciliation then reads and repairs
 * the buckets across the masters, and the administrator's controls reach every bucket, one slot
 * per script call.
 */
import calculateSlot from 'cluster-key-slot';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeRedis, createRedis, type RedisClient } from '../../../../src/infra/redis.js';
import { SaleControls } from '../../../../src/modules/seckill/admin/sale-controls.js';
import { buildSeckill, reconcileSeckill } from '../../../../src/modules/seckill/index.js';
import { homeBucket } from '../../../../src/modules/seckill/keys.js';
import { readBuckets } from '../../../../src/modules/seckill/sale/transfers.js';
import type { ReserveResult } from '../../../../src/modules/seckill/types.js';
import { startRedisCluster, type TestCluster } from '../../../../kit/redis-cluster.js';
import { createTestEnv, type TestEnv } from '../../../support/test-env.js';
import { insertSeckillVoucher, mysqlOrders, mysqlStock, statusOf } from '../../../support/seckill.js';

let cluster: TestCluster;
let env: TestEnv;
let redis: RedisClient;
let seckill: ReturnType<typeof buildSeckill>;

beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3 });
  env = await createTestEnv({ SECKILL_MAX_BUCKETS: '8' });
  const config = { ...env.config, redisClusterNodes: cluster.nodes };
  redis = createRedis(config);
  seckill = buildSeckill({ config, redis, db: env.db, consumerName: 'buckets-cluster', log: pino({ level: 'silent' }) });
}, 90_000);

afterAll(async () => {
  await seckill?.close();
  if (redis) await closeRedis(redis);
  await env?.cleanup();
  await cluster?.stop();
});

async function bucketedSale(stock: number, buckets: number): Promise<string> {
  const voucherId = await insertSeckillVoucher(env, { stock });
  await env.db.updateTable('tb_seckill_voucher').set({ buckets, total_stock: stock }).where('voucher_id', '=', voucherId).execute();
  return voucherId;
}

/** Orders placed at once in the skewed sale: enough to race for the last units of a bucket, few enough that the waves order the answers. */
const WAVE = 40;

const masterOf = async (key: string): Promise<number> => (await cluster.shardOf(calculateSlot(key))).master;

describe('buckets on a Redis Cluster of 3 masters', () => {
  it('puts B buckets on B different masters (B ≤ 3), and each bucket’s keys in one slot', async () => {
    for (const buckets of [2, 3]) {
      const masters = await Promise.all(Array.from({ length: buckets }, (_, index) => masterOf(seckill.keys.bucket('7', { index, of: buckets }).voucher)));
      expect(new Set(masters).size, `B = ${buckets}`).toBe(buckets);
    }
    const bucket = seckill.keys.bucket('7', { index: 1, of: 3 });
    expect(new Set([bucket.voucher, bucket.buyers, bucket.stream, bucket.queued, bucket.queuedByUser].map((key) => calculateSlot(key))).size).toBe(1);
  });

  it('sells every unit with nine buyers in ten homing to one bucket: no false "sold out", none oversold, one per user, MySQL = accepted; then reconciles its buckets across the masters', async () => {
    const stock = 150;
    const voucherId = await bucketedSale(stock, 3);
    const users: string[] = [];
    for (let id = 7_000_000; users.length < 400; id += 1) {
      const home = homeBucket(String(id), 3);
      // Nine in ten of the buyers home to bucket 0.
      if (home === 0 ? users.length % 10 !== 9 : users.length % 10 === 9) users.push(String(id));
    }
    let nextOrder = 8_000_000_000;
    // Each buyer twice: the second order of a buyer is refused (already bought) or sold out, never a second unit.
    // A 503 (units still moving after the store's patience, which a busy machine can exhaust) is no answer: the client retries.
    const place = async (userId: string): Promise<ReserveResult> => {
      const request = { orderId: String(nextOrder++), userId, voucherId };
      for (let attempt = 1; ; attempt += 1) {
        try {
          return await seckill.sale.decider.decide(request);
        } catch (error) {
          if (statusOf(error) !== 503 || attempt === 20) throw error;
        }
      }
    };
    // In waves of WAVE orders at once, so that "sold out" answered while a unit was left shows: an
    // order started after that answer still got a unit (none comes back in this sale).
    const answers: Array<{ result: ReserveResult; startedAt: number; settledAt: number }> = [];
    const requests = [...users, ...users];
    for (let first = 0; first < requests.length; first += WAVE) {
      await Promise.all(
        requests.slice(first, first + WAVE).map(async (userId) => {
          const startedAt = performance.now();
          const result = await place(userId);
          answers.push({ result, startedAt, settledAt: performance.now() });
        }),
      );
    }
    const results = answers.map(({ result }) => result);
    const lastAcceptedStart = Math.max(...answers.filter(({ result }) => result.outcome === 'accepted').map(({ startedAt }) => startedAt));
    const falseSoldOuts = answers.filter(({ result, settledAt }) => result.outcome === 'sold-out' && settledAt < lastAcceptedStart);
    expect(falseSoldOuts, '"sold out" answered before an order that then got a unit').toHaveLength(0);
    const accepted = results.filter(({ outcome }) => outcome === 'accepted').length;
    // Every unit sold: demand (400 buyers) is above the stock.
    expect(accepted).toBe(stock);
    expect(results.every(({ outcome }) => ['accepted', 'sold-out', 'already-bought'].includes(outcome))).toBe(true);
    const readings = await readBuckets(redis, seckill.keys, voucherId, 3);
    expect(readings.map(({ stock: left, pending }) => left + pending)).toEqual([0, 0, 0]);

    let orders = await mysqlOrders(env, voucherId);
    for (let pass = 0; pass < 10 && orders.length < accepted; pass += 1) {
      await seckill.worker.drainOnce();
      orders = await mysqlOrders(env, voucherId);
    }
    expect(orders).toHaveLength(stock);
    expect(new Set(orders.map((row) => row.user_id)).size).toBe(stock);
    expect(await mysqlStock(env, voucherId)).toBe(0);

    // Reconciled across the masters: drift in one bucket and a buyer's mark lost in another, found and repaired.
    const reconcile = (repair: boolean) => reconcileSeckill({ db: env.db, sale: seckill.sale }, { repair, voucherIds: [voucherId] });
    expect((await reconcile(false)).drifted).toEqual([]);
    const buyer = orders[0]!.user_id;
    const home = { index: homeBucket(buyer, 3), of: 3 };
    const other = { index: (home.index + 1) % 3, of: 3 };
    await redis.hdel(seckill.keys.bucket(voucherId, home).buyers, buyer);
    await redis.hincrby(seckill.keys.bucket(voucherId, other).voucher, 'stock', 2);
    expect((await reconcile(false)).drifted).toMatchObject([{ redisStock: 2, expectedStock: 0, missingBuyers: [buyer], extraBuyers: [] }]);
    expect(await reconcile(true)).toMatchObject({ repaired: 1, skipped: [] });
    expect((await readBuckets(redis, seckill.keys, voucherId, 3)).map(({ stock: left, pending }) => left + pending)).toEqual([0, 0, 0]);
    expect(await redis.hget(seckill.keys.bucket(voucherId, home).buyers, buyer)).toBe('1');
    expect((await reconcile(false)).drifted).toEqual([]);
  }, 60_000);

  it('pauses, resumes, raises and lowers a sale of 3 buckets on 3 masters: every bucket refuses while paused, total = sold + units left', async () => {
    const voucherId = await bucketedSale(9, 3);
    const controls = new SaleControls(env.db, seckill.sale);
    let nextUser = 7_100_000;
    let nextOrder = 8_500_000_000;
    /** A new buyer homing to each bucket. */
    const buyers = (): string[] =>
      [0, 1, 2].map((bucket) => {
        while (homeBucket(String(nextUser), 3) !== bucket) nextUser += 1;
        return String(nextUser++);
      });
    const place = async (users: string[]) =>
      (await Promise.all(users.map((userId) => seckill.sale.decider.decide({ orderId: String(nextOrder++), userId, voucherId })))).map(
        ({ outcome }) => outcome,
      );

    expect(await place(buyers())).toEqual(['accepted', 'accepted', 'accepted']);
    expect((await controls.pause(voucherId, '1')).paused).toBe(true);
    expect(await place(buyers())).toEqual(['suspended', 'suspended', 'suspended']);
    await controls.resume(voucherId, '1');
    expect(await place(buyers())).toEqual(['accepted', 'accepted', 'accepted']);

    expect(await controls.update(voucherId, '1', { stock: 15 })).toMatchObject({ stock: 15, left: 9 });
    expect(await controls.update(voucherId, '1', { stock: 5 }).then(() => 'updated', statusOf)).toBe(400);
    expect(await controls.update(voucherId, '1', { stock: 8 })).toMatchObject({ stock: 8, left: 2 });
    const readings = await readBuckets(redis, seckill.keys, voucherId, 3);
    expect(readings.reduce((sum, reading) => sum + reading.stock + reading.pending, 0)).toBe(2);
    const totals = await Promise.all([0, 1, 2].map((index) => redis.hget(seckill.keys.bucket(voucherId, { index, of: 3 }).voucher, 'total')));
    expect(totals.reduce((sum, total) => sum + Number(total), 0)).toBe(8);
  }, 30_000);
});

describe('buckets with SECKILL_REPLICA_ACKS on masters that have no replica', () => {
  it('refills and sells out: a step no failover can undo is durable without a replica to confirm it', async () => {
    // No replica exists in the Cluster's view of any master, so no failover can promote one without
    // a step: every WAIT falls short (acknowledged 0), and the steps stand as durable.
    const config = { ...env.config, redisClusterNodes: cluster.nodes, seckill: { ...env.config.seckill, replicaAcks: 1, replicaTimeoutMs: 20 } };
    const acked = buildSeckill({
      config,
      redis,
      db: env.db,
      consumerName: 'buckets-acks',
      log: pino({ level: 'silent' }),
    });
    try {
      const voucherId = await bucketedSale(12, 3);
      const buyers: string[] = [];
      // Every buyer homes to bucket 0: its 4 units, then refills from buckets 1 and 2.
      for (let id = 7_200_000; buyers.length < 20; id += 1) if (homeBucket(String(id), 3) === 0) buyers.push(String(id));
      let nextOrder = 8_700_000_000;
      const outcomes: string[] = [];
      for (const userId of buyers) {
        outcomes.push((await acked.sale.decider.decide({ orderId: String(nextOrder++), userId, voucherId })).outcome);
      }
      expect(outcomes.filter((outcome) => outcome === 'accepted')).toHaveLength(12);
      expect(outcomes.slice(12)).toEqual(Array.from({ length: 8 }, () => 'sold-out'));
      const readings = await readBuckets(redis, acked.keys, voucherId, 3);
      expect(readings.map(({ stock: left, pending }) => left + pending)).toEqual([0, 0, 0]);
    } finally {
      await acked.close();
    }
  }, 30_000);
});
