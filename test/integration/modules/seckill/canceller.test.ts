import pino from 'pino';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSeckill } from '../../../../src/modules/seckill/index.js';
import { createTestEnv, type TestEnv } from '../../../support/test-env.js';
import { insertSeckillVoucher, mysqlOrders, mysqlStock } from '../../../support/seckill.js';

let env: TestEnv;
let instanceA: ReturnType<typeof buildSeckill>;
let instanceB: ReturnType<typeof buildSeckill>;

beforeAll(async () => {
  env = await createTestEnv({ SECKILL_PAYMENT_WINDOW_SECONDS: '60' });
  const log = pino({ level: 'silent' });
  instanceA = buildSeckill({ config: env.config, redis: env.redis, db: env.db, consumerName: 'a', log });
  instanceB = buildSeckill({ config: env.config, redis: env.redis, db: env.db, consumerName: 'b', log });
});

afterAll(async () => {
  await env?.cleanup();
});

/** Moves the orders' creation time back past the payment window. */
async function age(voucherId: string, seconds: number): Promise<void> {
  await sql`UPDATE tb_voucher_order SET create_time = create_time - INTERVAL ${seconds} SECOND WHERE voucher_id = ${voucherId}`.execute(env.db);
}

describe('unpaid order cancellation', () => {
  it('cancels orders unpaid past the window exactly once with two cancellers, restores stock in MySQL and Redis, and the user may buy again', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 10 });
    const users = ['1', '2', '3', '4'];
    const orderIds = await Promise.all(users.map((user) => instanceA.placement.place(user, voucherId)));
    await instanceA.worker.drainOnce();
    expect(await mysqlStock(env, voucherId)).toBe(6);
    await instanceA.userOrders.pay('4', orderIds[3]!); // a paid order is never cancelled

    await age(voucherId, 30);
    expect(await instanceA.canceller.runOnce()).toEqual({ cancelled: 0, released: 0 }); // still inside the window
    await age(voucherId, 60);

    // Both instances sweep at the same moment, several times over.
    const sweeps = await Promise.all([1, 2, 3].flatMap(() => [instanceA.canceller.runOnce(), instanceB.canceller.runOnce()]));
    expect(sweeps.reduce((sum, sweep) => sum + sweep.cancelled, 0)).toBe(3);
    expect(sweeps.reduce((sum, sweep) => sum + sweep.released, 0)).toBe(3);

    const orders = await mysqlOrders(env, voucherId);
    expect(
      orders
        .filter((order) => order.status === 4)
        .map((order) => order.user_id)
        .sort(),
    ).toEqual(['1', '2', '3']);
    expect(orders.find((order) => order.user_id === '4')?.status).toBe(2);
    expect(orders.every((order) => order.status !== 4 || (order.live === null && order.stock_released === 1))).toBe(true);
    expect(await mysqlStock(env, voucherId)).toBe(9);
    expect((await instanceA.sale.reads.read(voucherId))?.stock).toBe(9);

    const again = await instanceB.placement.place('1', voucherId);
    await instanceB.worker.drainOnce();
    expect((await instanceB.userOrders.get('1', again)).state).toBe('created');
    expect((await instanceB.userOrders.get('1', orderIds[0]!)).state).toBe('cancelled');
    expect(await mysqlStock(env, voucherId)).toBe(8);
    await expect(instanceB.userOrders.pay('1', orderIds[0]!)).rejects.toThrow('cancelled');
  });

  it('finishes the Redis half of a cancellation that crashed after the MySQL commit, once', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 5 });
    const orderId = await instanceA.placement.place('7', voucherId);
    await instanceA.worker.drainOnce();
    await age(voucherId, 120);
    // The MySQL half alone, as if the process died right after it.
    expect(await instanceA.orders.cancelUnpaid(orderId)).toBe(true);
    expect((await instanceA.sale.reads.read(voucherId))?.stock).toBe(4);

    const [a, b] = await Promise.all([instanceA.canceller.runOnce(), instanceB.canceller.runOnce()]);
    expect(a.released + b.released).toBe(1);
    expect((await instanceA.sale.reads.read(voucherId))?.stock).toBe(5);
    expect(await mysqlStock(env, voucherId)).toBe(5);
    expect(await instanceA.canceller.runOnce()).toEqual({ cancelled: 0, released: 0 });
  });
});
