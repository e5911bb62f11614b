/**
 * A voucher sold from buckets under the sync strategy (SECKILL_STRATEGY=sync): each order is held
 * in its buyer's home bucket (reserve.lua, mode hold), written to MySQL by the request under the
 * buyer's lock, then settled in that bucket's lane; empty buckets are refilled as under async. On
 * two instances, with demand above stock: every unit sold, none twice to a user, MySQL holding
 * exactly the accepted orders before the answers, and nothing left held or queued in the lanes.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcileSeckill } from '../../../../src/modules/seckill/admin/reconcile.js';
import { SaleKeys, homeBucket } from '../../../../src/modules/seckill/keys.js';
import { buildSale } from '../../../../src/modules/seckill/sale/sale.js';
import { REFUSALS } from '../../../../src/modules/seckill/messages.js';
import { bucketsOf, readBuckets } from '../../../../src/modules/seckill/sale/transfers.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';
import { buy, insertSeckillVoucher, mysqlOrders, mysqlStock } from '../../../support/seckill.js';

let env: TestEnv;
let instances: FastifyInstance[];
let users: Array<{ id: string; token: string }>;
let keys: SaleKeys;

beforeAll(async () => {
  env = await createTestEnv({ SECKILL_STRATEGY: 'sync', SECKILL_MAX_BUCKETS: '8', MYSQL_POOL_SIZE: '20' });
  users = await createUsersWithSessions(env, 150);
  instances = [(await buildTestApp(env)).app, (await buildTestApp(env)).app];
  keys = new SaleKeys(env.config.seckill.streamShards, true);
});

afterAll(async () => {
  for (const app of instances ?? []) await app.close();
  await env?.cleanup();
});

const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);

/** A request as a client makes it: a 503 with Retry-After (units still moving between buckets) is retried. */
async function buyRetrying(app: FastifyInstance, token: string, voucherId: string) {
  for (let attempt = 1; ; attempt += 1) {
    const answer = await buy(app, token, voucherId);
    if (answer.statusCode !== 503 || attempt === 20) return answer;
  }
}

describe('a bucketed sale under the sync strategy', () => {
  it('sells every unit of 3 buckets, refills included, to buyers asking twice each: one per user, MySQL = accepted before the answers, nothing held', async () => {
    const stock = 60;
    const voucherId = await insertSeckillVoucher(env, { stock });
    await env.db.updateTable('tb_seckill_voucher').set({ buckets: 3, total_stock: stock }).where('voucher_id', '=', voucherId).execute();
    // Only 5 buyers home to bucket 0 (its share: 20 units): at least 15 of its units sell only by refills to the others.
    const homingTo0 = users.filter((user) => homeBucket(user.id, 3) === 0);
    const buyers = [...homingTo0.slice(0, 5), ...users.filter((user) => homeBucket(user.id, 3) !== 0)];
    expect(buyers.length).toBeGreaterThan(stock);

    const requests = [...buyers, ...buyers].map((user, index) => buyRetrying(instances[index % 2]!, user.token, voucherId));
    const answers = await Promise.all(requests);
    expect(answers.map((answer) => answer.statusCode).filter((code) => code !== 200)).toEqual([]);
    const bodies = answers.map((answer) => answer.json<{ success: boolean; data?: string; errorMsg?: string }>());
    const accepted = bodies.filter((body) => body.success).map((body) => body.data!);
    // A user's second request may time out waiting for that user's lock on a loaded machine ("busy"): it takes nothing.
    const refusals = new Set(bodies.filter((body) => !body.success).map((body) => body.errorMsg));
    expect([...refusals].filter((message) => ![REFUSALS.soldOut, REFUSALS.alreadyBought, REFUSALS.busy].includes(message!))).toEqual([]);
    expect(accepted).toHaveLength(stock);

    // Written by the requests themselves, before their answers: no worker runs here to write anything later.
    const orders = await mysqlOrders(env, voucherId);
    expect(new Set(orders.map((row) => row.id))).toEqual(new Set(accepted));
    expect(new Set(orders.map((row) => row.user_id)).size).toBe(stock);
    expect(await mysqlStock(env, voucherId)).toBe(0);

    const readings = await readBuckets(env.redis, keys, voucherId, 3);
    expect(readings.map(({ stock: left, pending }) => left + pending)).toEqual([0, 0, 0]);
    for (const bucket of bucketsOf(3)) {
      const lane = keys.bucket(voucherId, bucket);
      expect(await env.redis.zcard(lane.inFlight)).toBe(0);
      expect(await env.redis.hlen(lane.queued)).toBe(0);
      expect(await env.redis.xlen(lane.stream)).toBe(0);
    }
  }, 60_000);

  it('with Redis above MySQL: MySQL refuses the surplus, its units go back to their buckets, nothing oversold; the repair then realigns Redis', async () => {
    const stock = 30;
    const voucherId = await insertSeckillVoucher(env, { stock });
    await env.db.updateTable('tb_seckill_voucher').set({ buckets: 3, total_stock: stock }).where('voucher_id', '=', voucherId).execute();
    const buyers = users.slice(0, 70);
    // The first order publishes the sale (30 units in Redis); then MySQL loses 5 units Redis still holds.
    expect((await buyRetrying(instances[0]!, buyers[0]!.token, voucherId)).json()).toMatchObject({ success: true });
    await env.db
      .updateTable('tb_seckill_voucher')
      .set((eb) => ({ stock: eb('stock', '-', 5) }))
      .where('voucher_id', '=', voucherId)
      .execute();

    const answers = await Promise.all(buyers.slice(1).map((user, index) => buyRetrying(instances[index % 2]!, user.token, voucherId)));
    const bodies = answers.map((answer) => answer.json<{ success: boolean; data?: string; errorMsg?: string }>());
    const accepted = bodies.filter((body) => body.success).map((body) => body.data!);
    expect(bodies.filter((body) => !body.success).map((body) => body.errorMsg)).toEqual(Array.from({ length: 69 - 24 }, () => REFUSALS.soldOut));
    expect(accepted).toHaveLength(24);
    const orders = await mysqlOrders(env, voucherId);
    expect(orders).toHaveLength(25);
    expect(new Set(orders.map((row) => row.user_id)).size).toBe(25);
    expect(await mysqlStock(env, voucherId)).toBe(0);
    // The 5 units MySQL never had went back to the buckets that sold them: Redis holds them, and buyers none of them.
    const sale = buildSale(env.redis, keys);
    const reconcile = (repair: boolean) => reconcileSeckill({ db: env.db, sale }, { repair, voucherIds: [voucherId] });
    expect((await reconcile(false)).drifted).toEqual([
      { voucherId, mysqlStock: 0, redisStock: 5, expectedStock: 0, missingBuyers: [], extraBuyers: [], buckets: 3, missingBuckets: [] },
    ]);
    expect(await reconcile(true)).toMatchObject({ repaired: 1, skipped: [] });
    expect(sum((await readBuckets(env.redis, keys, voucherId, 3)).map(({ stock: left, pending }) => left + pending))).toBe(0);
    expect((await reconcile(false)).drifted).toEqual([]);
  }, 60_000);
});
