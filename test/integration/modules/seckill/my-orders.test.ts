import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OrderStatus } from '../../../../src/modules/seckill/record/order-repository.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';
import { buy, insertSeckillVoucher } from '../../../support/seckill.js';
import { eventually } from '../../../support/eventually.js';

let env: TestEnv;
let app: FastifyInstance;
let alice: { id: string; token: string };
let bob: { id: string; token: string };
/** Alice's orders in the order she placed them, and their vouchers. */
const placed: Array<{ orderId: string; voucherId: string }> = [];

beforeAll(async () => {
  env = await createTestEnv({ SECKILL_WORKER: 'true' });
  [alice, bob] = (await createUsersWithSessions(env, 2, 15_900_000_000)) as [typeof alice, typeof bob];
  ({ app } = await buildTestApp(env));
  for (let i = 1; i <= 12; i++) {
    const voucherId = await insertSeckillVoucher(env, { stock: 5 });
    await env.db
      .updateTable('tb_voucher')
      .set({ title: `voucher ${i}`, pay_value: String(100 * i) })
      .where('id', '=', voucherId)
      .execute();
    const body = (await buy(app, alice.token, voucherId)).json();
    expect(body).toMatchObject({ success: true });
    placed.push({ orderId: body.data, voucherId });
  }
  expect((await buy(app, bob.token, placed[0]!.voucherId)).json()).toMatchObject({ success: true });
  await eventually(async () => {
    const count = await env.db
      .selectFrom('tb_voucher_order')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(13);
  });
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

const myOrders = (token: string, query = '') => app.inject({ url: `/api/voucher-order/of/me${query}`, headers: { authorization: token } });
/**
 * Alice's orders as the list shows them, newest first: by order id descending (ids rise with the time
 * of acceptance; decimal strings of 64-bit ints, compared as BigInt), never by MySQL's creation time,
 * which has one-second precision. With `n`, the voucher's number (its title and price).
 */
const newestFirst = () =>
  placed
    .map((order, index) => ({ ...order, n: index + 1 }))
    .sort((a, b) => (BigInt(a.orderId) < BigInt(b.orderId) ? 1 : BigInt(a.orderId) > BigInt(b.orderId) ? -1 : 0));

describe('GET /api/voucher-order/of/me', () => {
  it("lists the caller's orders newest first, 10 a page, with the total and each voucher's title, shop and price", async () => {
    const first = (await myOrders(alice.token)).json();
    expect(first.success).toBe(true);
    expect(first.total).toBe(12);
    const orders = newestFirst();
    expect(first.data.map((order: { id: string }) => order.id)).toEqual(orders.slice(0, 10).map((order) => order.orderId));
    const newest = orders[0]!;
    expect(first.data[0]).toEqual({
      id: newest.orderId,
      voucherId: newest.voucherId,
      title: `voucher ${newest.n}`,
      shopId: '1',
      state: 'created',
      payValue: 100 * newest.n,
      createTime: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
    });
    expect(typeof first.data[0].id).toBe('string'); // 64-bit ids stay exact

    const second = (await myOrders(alice.token, '?current=2')).json();
    expect(second.total).toBe(12);
    expect(second.data.map((order: { id: string }) => order.id)).toEqual(orders.slice(10).map((order) => order.orderId));
    expect((await myOrders(alice.token, '?current=3')).json()).toEqual({ success: true, data: [], total: 12 });
  });

  it("shows each order's state as GET /voucher-order/{id} does: paid with its time, cancelled", async () => {
    const [paid, cancelled] = newestFirst().map((order) => order.orderId) as [string, string]; // the two listed first
    expect((await app.inject({ method: 'POST', url: `/api/voucher-order/${paid}/pay`, headers: { authorization: alice.token } })).json()).toMatchObject({
      success: true,
    });
    await env.db.updateTable('tb_voucher_order').set({ status: OrderStatus.cancelled, live: null }).where('id', '=', cancelled).execute();

    const [newest, next] = (await myOrders(alice.token)).json().data;
    expect(newest).toMatchObject({ id: paid, state: 'paid', payTime: expect.any(String) });
    expect(next).toMatchObject({ id: cancelled, state: 'cancelled' });
    expect(next.payTime).toBeUndefined();
    for (const order of [newest, next]) {
      const single = (await app.inject({ url: `/api/voucher-order/${String(order.id)}`, headers: { authorization: alice.token } })).json().data;
      expect(single.state).toBe(order.state);
    }
  });

  it("shows only the caller's own orders", async () => {
    const bobs = (await myOrders(bob.token)).json();
    expect(bobs.total).toBe(1);
    expect(bobs.data).toEqual([expect.objectContaining({ voucherId: placed[0]!.voucherId, title: 'voucher 1' })]);
    expect(bobs.data[0].id).not.toBe(placed[0]!.orderId);
  });

  it('needs a login and a page number from 1', async () => {
    expect((await app.inject({ url: '/api/voucher-order/of/me' })).statusCode).toBe(401);
    for (const query of ['?current=0', '?current=x']) {
      const response = await myOrders(alice.token, query);
      expect(response.statusCode).toBe(400);
      expect(response.json().errorMsg).toContain('querystring.current must be a page number from 1');
    }
  });
});
