import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../../../src/infra/config.js';
import { buildSeckill } from '../../../../src/modules/seckill/index.js';
import { REFUSALS } from '../../../../src/modules/seckill/messages.js';
import { reconcileSeckill } from '../../../../src/modules/seckill/admin/reconcile.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, sessionOf, type TestEnv } from '../../../support/test-env.js';
import { buy, insertSeckillVoucher, mysqlOrders, mysqlStock } from '../../../support/seckill.js';

let env: TestEnv;
let asyncApp: FastifyInstance;
let syncApp: FastifyInstance;
let users: Array<{ id: string; token: string }>;
let admin: { authorization: string };
/** The order worker, run by hand (drain) so a test decides when queued orders reach MySQL. */
let seckill: ReturnType<typeof buildSeckill>;

const withStrategy = (config: Config, strategy: 'async' | 'sync'): Config => ({ ...config, seckill: { ...config.seckill, strategy } });

beforeAll(async () => {
  env = await createTestEnv({ SECKILL_STREAM_SHARDS: '2' });
  users = await createUsersWithSessions(env, 20, 15_700_000_000);
  admin = await sessionOf(env, '999002', 'admin');
  await env.db.insertInto('tb_shop').values({ id: '71', name: 'limits shop', type_id: '1', address: 'here', x: 120.15, y: 30.33 }).execute();
  asyncApp = (await buildTestApp(env, undefined, { config: withStrategy(env.config, 'async') })).app;
  syncApp = (await buildTestApp(env, undefined, { config: withStrategy(env.config, 'sync') })).app;
  seckill = buildSeckill({ config: env.config, redis: env.redis, db: env.db, consumerName: 'limits-test', log: pino({ level: 'silent' }) });
});

afterAll(async () => {
  await asyncApp?.close();
  await syncApp?.close();
  await seckill?.close();
  await env?.cleanup();
});

async function voucherWithLimit(limit: number, stock = 50): Promise<string> {
  const voucherId = await insertSeckillVoucher(env, { stock });
  await env.db.updateTable('tb_seckill_voucher').set({ limit_per_user: limit, total_stock: stock }).where('voucher_id', '=', voucherId).execute();
  return voucherId;
}

async function drain(voucherId: string, expected: number): Promise<void> {
  for (let round = 0; round < 50 && (await mysqlOrders(env, voucherId)).filter((order) => order.live === 1).length < expected; round += 1) {
    await seckill.worker.drainOnce();
  }
}

const slotsInRedis = async (voucherId: string, userId: string) => Number((await env.redis.hget(seckill.keys.voucher(voucherId).buyers, userId)) ?? 0);
const answers = async (app: FastifyInstance, token: string, voucherId: string, count: number) =>
  (await Promise.all(Array.from({ length: count }, () => buy(app, token, voucherId)))).map((response) => response.json<Record<string, unknown>>());

describe('limitPerUser: up to N live orders of a voucher per user', () => {
  it('10 concurrent requests of one user on limit 3 (async and sync together): 3 orders in slots 1-3, 7 clear refusals', async () => {
    const voucherId = await voucherWithLimit(3);
    const user = users[0]!;
    const bodies = [...(await answers(asyncApp, user.token, voucherId, 5)), ...(await answers(syncApp, user.token, voucherId, 5))];
    expect(bodies.filter((body) => body.success)).toHaveLength(3);
    const refusals = bodies.filter((body) => !body.success).map((body) => body.errorMsg);
    expect(refusals.length).toBe(7);
    expect(refusals.every((message) => message === REFUSALS.atLimit(3) || message === REFUSALS.busy)).toBe(true);
    expect(refusals).toContain('You already hold 3 orders of this voucher');
    await drain(voucherId, 3);
    const orders = await mysqlOrders(env, voucherId);
    expect(orders.map((order) => order.slot).sort()).toEqual([1, 2, 3]);
    expect(await mysqlStock(env, voucherId)).toBe(47);
    expect(await slotsInRedis(voucherId, user.id)).toBe(0b111);
  });

  it("a release gives back exactly that order's slot; the next order takes it, and MySQL refuses a second live order in one slot", async () => {
    const voucherId = await voucherWithLimit(3);
    const user = users[1]!;
    for (let i = 0; i < 3; i++) expect((await buy(syncApp, user.token, voucherId)).json()).toMatchObject({ success: true });
    const middle = (await mysqlOrders(env, voucherId)).find((order) => order.slot === 2)!;
    expect(await seckill.orders.cancelUnpaid(middle.id)).toBe(true);
    expect(await seckill.sale.settlement.release({ orderId: middle.id, userId: user.id, voucherId, slot: 2 })).toBe(true);
    expect(await seckill.sale.settlement.release({ orderId: middle.id, userId: user.id, voucherId, slot: 2 })).toBe(false); // once
    expect(await slotsInRedis(voucherId, user.id)).toBe(0b101);
    expect((await buy(syncApp, user.token, voucherId)).json()).toMatchObject({ success: true });
    const live = (await mysqlOrders(env, voucherId)).filter((order) => order.live === 1);
    expect(live.map((order) => order.slot).sort()).toEqual([1, 2, 3]);
    // The safety net: slot 1 is held, whatever Redis says.
    expect(await seckill.orders.persist({ orderId: '9000000000000001', userId: user.id, voucherId, slot: 1 })).toBe('user-has-order');
  });

  it("hmdp's rule by default (limit 1): its own message", async () => {
    const voucherId = await voucherWithLimit(1);
    const bodies = await answers(asyncApp, users[2]!.token, voucherId, 3);
    expect(bodies.filter((body) => body.success)).toHaveLength(1);
    expect(bodies.filter((body) => body.errorMsg === REFUSALS.alreadyBought)).toHaveLength(2);
  });

  it('is set at creation and by the PATCH control (audited, idempotent, applied to Redis while the sale runs)', async () => {
    const created = await asyncApp.inject({
      method: 'POST',
      url: '/api/voucher/seckill',
      headers: admin,
      payload: {
        shopId: '71',
        title: 'two each',
        payValue: 100,
        actualValue: 200,
        stock: 10,
        beginTime: new Date(Date.now() - 60_000).toISOString(),
        endTime: new Date(Date.now() + 3600_000).toISOString(),
        limitPerUser: 2,
      },
    });
    expect(created.json(), created.body).toMatchObject({ success: true });
    const voucherId = created.json().data as string;
    expect((await seckill.voucherService.listByShop('71')).find((voucher) => voucher.id === voucherId)?.limitPerUser).toBe(2);
    expect(await env.redis.hget(seckill.keys.voucher(voucherId).voucher, 'limit')).toBe('2');
    const user = users[3]!;
    expect((await answers(asyncApp, user.token, voucherId, 3)).filter((body) => body.success)).toHaveLength(2);

    const patch = (payload: object) => asyncApp.inject({ method: 'PATCH', url: `/api/voucher/seckill/${voucherId}`, headers: admin, payload });
    const raised = await patch({ limitPerUser: 3 });
    expect(raised.json().data).toMatchObject({ limitPerUser: 3, changed: true });
    expect((await patch({ limitPerUser: 3 })).json().data).toMatchObject({ changed: false });
    expect((await buy(asyncApp, user.token, voucherId)).json()).toMatchObject({ success: true });
    // Lowered below what the user holds: the orders stay, no more are sold to that user.
    expect((await patch({ limitPerUser: 1 })).json().data).toMatchObject({ limitPerUser: 1 });
    expect((await buy(asyncApp, user.token, voucherId)).json().errorMsg).toBe(REFUSALS.alreadyBought);
    const row = await env.db.selectFrom('tb_seckill_voucher').select('limit_per_user').where('voucher_id', '=', voucherId).executeTakeFirstOrThrow();
    expect(row.limit_per_user).toBe(1);
    const audit = (await asyncApp.inject({ url: `/api/voucher/seckill/${voucherId}/audit`, headers: admin })).json().data;
    expect(
      audit.map((entry: { before: { limitPerUser: number }; after: { limitPerUser: number } }) => [entry.before.limitPerUser, entry.after.limitPerUser]),
    ).toEqual([
      [3, 1],
      [2, 3],
    ]);
    for (const bad of [0, 31, 1.5]) expect((await patch({ limitPerUser: bad })).statusCode).toBe(400);
  });

  it('lowered below what a user holds: a freed slot under the new limit does not let the user buy again, and reconcile stays clean', async () => {
    const voucherId = await voucherWithLimit(3);
    const user = users[5]!;
    for (let i = 0; i < 3; i++) expect((await buy(syncApp, user.token, voucherId)).json()).toMatchObject({ success: true });
    const bySlot = new Map((await mysqlOrders(env, voucherId)).map((order) => [order.slot, order.id]));
    for (const slot of [2, 3]) {
      const paid = await asyncApp.inject({ method: 'POST', url: `/api/voucher-order/${bySlot.get(slot)!}/pay`, headers: { authorization: user.token } });
      expect(paid.json()).toMatchObject({ success: true });
    }
    const lowered = await asyncApp.inject({ method: 'PATCH', url: `/api/voucher/seckill/${voucherId}`, headers: admin, payload: { limitPerUser: 1 } });
    expect(lowered.json().data).toMatchObject({ limitPerUser: 1 });
    // The unpaid order (slot 1) is cancelled: slot 1 is free, slots 2 and 3 stay held (paid).
    expect(await seckill.orders.cancelUnpaid(bySlot.get(1)!)).toBe(true);
    expect(await seckill.sale.settlement.release({ orderId: bySlot.get(1)!, userId: user.id, voucherId, slot: 1 })).toBe(true);
    expect(await slotsInRedis(voucherId, user.id)).toBe(0b110);
    for (const app of [asyncApp, syncApp]) expect((await buy(app, user.token, voucherId)).json().errorMsg).toBe(REFUSALS.alreadyBought);
    expect((await mysqlOrders(env, voucherId)).filter((order) => order.live === 1)).toHaveLength(2);
    // Slots above the limit are history the user legitimately holds, not drift.
    const deps = { db: env.db, sale: seckill.sale };
    expect((await reconcileSeckill(deps, { repair: false, voucherIds: [voucherId] })).drifted).toEqual([]);
    // Raised to 3 again: the user holds 2, so one more is sold, in the free slot 1.
    await asyncApp.inject({ method: 'PATCH', url: `/api/voucher/seckill/${voucherId}`, headers: admin, payload: { limitPerUser: 3 } });
    expect((await buy(syncApp, user.token, voucherId)).json()).toMatchObject({ success: true });
    expect(await slotsInRedis(voucherId, user.id)).toBe(0b111);
    expect((await buy(syncApp, user.token, voucherId)).json().errorMsg).toBe(REFUSALS.atLimit(3));
  });

  it('lowered from 3 to 2 while a user holds slots 2 and 3: refused; a user holding slot 3 alone buys one more, in slot 1', async () => {
    const voucherId = await voucherWithLimit(3);
    const [two, one] = [users[6]!, users[7]!];
    for (const user of [two, one]) {
      for (let i = 0; i < 3; i++) expect((await buy(syncApp, user.token, voucherId)).json()).toMatchObject({ success: true });
    }
    const orders = await mysqlOrders(env, voucherId);
    const release = async (user: { id: string }, slot: number) => {
      const order = orders.find((row) => row.user_id === user.id && row.slot === slot)!;
      expect(await seckill.orders.cancelUnpaid(order.id)).toBe(true);
      expect(await seckill.sale.settlement.release({ orderId: order.id, userId: user.id, voucherId, slot })).toBe(true);
    };
    await release(two, 1);
    await release(one, 1);
    await release(one, 2);
    await asyncApp.inject({ method: 'PATCH', url: `/api/voucher/seckill/${voucherId}`, headers: admin, payload: { limitPerUser: 2 } });
    expect((await buy(asyncApp, two.token, voucherId)).json().errorMsg).toBe(REFUSALS.atLimit(2));
    expect((await buy(syncApp, one.token, voucherId)).json()).toMatchObject({ success: true });
    expect(await slotsInRedis(voucherId, one.id)).toBe(0b101);
    expect((await buy(syncApp, one.token, voucherId)).json().errorMsg).toBe(REFUSALS.atLimit(2));
  });

  it('reconcile compares slots, not membership, and repairs them from MySQL', async () => {
    const voucherId = await voucherWithLimit(2);
    const user = users[4]!;
    expect((await answers(syncApp, user.token, voucherId, 2)).filter((body) => body.success)).toHaveLength(2);
    const deps = { db: env.db, sale: seckill.sale };
    expect((await reconcileSeckill(deps, { repair: false, voucherIds: [voucherId] })).drifted).toEqual([]);
    await env.redis.hset(seckill.keys.voucher(voucherId).buyers, user.id, 0b01, '424242', 0b10); // one slot lost, one invented
    const drift = (await reconcileSeckill(deps, { repair: false, voucherIds: [voucherId] })).drifted[0];
    expect(drift).toMatchObject({ missingBuyers: [user.id], extraBuyers: ['424242'] });
    expect((await reconcileSeckill(deps, { repair: true, voucherIds: [voucherId] })).repaired).toBe(1);
    expect(await env.redis.hgetall(seckill.keys.voucher(voucherId).buyers)).toEqual({ [user.id]: String(0b11) });
    expect(await env.redis.hget(seckill.keys.voucher(voucherId).voucher, 'limit')).toBe('2');
    expect((await buy(asyncApp, user.token, voucherId)).json().errorMsg).toBe(REFUSALS.atLimit(2));
  });
});
