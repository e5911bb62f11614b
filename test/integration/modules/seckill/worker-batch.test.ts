/**
 * The order worker writes a batch of new orders in one transaction, and falls back to one
 * transaction per order when the batch holds a redelivered or conflicting order: the outcome of
 * every entry is then the same as if each had been written alone.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSeckill } from '../../../../src/modules/seckill/index.js';
import { OutOfStockInDatabase, type PersistOutcome } from '../../../../src/modules/seckill/record/order-repository.js';
import { OrderWorker } from '../../../../src/modules/seckill/writer/order-worker.js';
import { ORDER_GROUP } from '../../../../src/modules/seckill/keys.js';
import { createTestEnv, type TestEnv } from '../../../support/test-env.js';
import { insertSeckillVoucher, mysqlOrders, mysqlStock } from '../../../support/seckill.js';

let env: TestEnv;
let seckill: ReturnType<typeof buildSeckill>;
let results: Array<PersistOutcome | 'dead-letter' | 'failed'>;
let worker: OrderWorker;

beforeAll(async () => {
  env = await createTestEnv({ SECKILL_STREAM_SHARDS: '1', SECKILL_WORKER_BATCH: '100' });
  seckill = buildSeckill({ config: env.config, redis: env.redis, db: env.db, consumerName: 'batch-test', log: pino({ level: 'silent' }) });
  results = [];
  worker = new OrderWorker(seckill.stream, seckill.sale.settlement, seckill.orders, {
    consumer: 'batch-test',
    batchSize: 100,
    maxDeliveries: 5,
    claimIdleMs: 60_000,
    retryDelayMs: 0,
    log: pino({ level: 'silent' }),
    onResult: (result) => results.push(result),
  });
});

afterAll(async () => {
  await env?.cleanup();
});

async function backlog(): Promise<{ pending: number; queued: number }> {
  const { stream, queued } = seckill.keys.shard(0);
  const [pending] = (await env.redis.xpending(stream, ORDER_GROUP)) as [number];
  return { pending, queued: await env.redis.hlen(queued) };
}

describe('order worker batches', () => {
  it('writes a batch of new orders for several vouchers together, with the stock of each', async () => {
    results.length = 0;
    const [first, second] = [await insertSeckillVoucher(env, { stock: 50 }), await insertSeckillVoucher(env, { stock: 50 })];
    const accepted = await Promise.all(Array.from({ length: 60 }, (_, i) => seckill.placement.place(String(1000 + i), i % 2 === 0 ? first : second)));

    await worker.drainOnce();

    expect(results).toEqual(Array(60).fill('created'));
    const orders = [...(await mysqlOrders(env, first)), ...(await mysqlOrders(env, second))];
    expect(new Set(orders.map((order) => order.id))).toEqual(new Set(accepted));
    expect([await mysqlStock(env, first), await mysqlStock(env, second)]).toEqual([20, 20]);
    expect(await backlog()).toEqual({ pending: 0, queued: 0 });
  });

  it('falls back to one order at a time when the batch holds a redelivery and a conflict', async () => {
    results.length = 0;
    const voucher = await insertSeckillVoucher(env, { stock: 10 });
    const fresh = await Promise.all(['1', '2', '3'].map((userId) => seckill.placement.place(userId, voucher)));
    // A redelivery: the first order reached MySQL before a crash, its entry was never acknowledged.
    await seckill.orders.persist({ orderId: fresh[0]!, userId: '1', voucherId: voucher });
    // A conflict: Redis lost user 9's buyer mark and accepted a second order; MySQL holds the first.
    await env.db.insertInto('tb_voucher_order').values({ id: '77', user_id: '9', voucher_id: voucher }).execute();
    await env.db
      .updateTable('tb_seckill_voucher')
      .set({ stock: 10 - 2 })
      .where('voucher_id', '=', voucher)
      .execute(); // orders 77 and fresh[0]
    const second = await seckill.placement.place('9', voucher);
    const redisStockBefore = (await seckill.sale.reads.read(voucher))!.stock;

    await worker.drainOnce();

    expect(results.sort()).toEqual(['created', 'created', 'duplicate', 'user-has-order']);
    const orders = await mysqlOrders(env, voucher);
    expect(orders.map((order) => order.id).sort()).toEqual(['77', ...fresh].sort());
    expect(orders.some((order) => order.id === second)).toBe(false);
    // MySQL: 10 - (77, fresh×3). Redis: the refused order's unit came back.
    expect(await mysqlStock(env, voucher)).toBe(6);
    expect((await seckill.sale.reads.read(voucher))!.stock).toBe(redisStockBefore + 1);
    expect(await backlog()).toEqual({ pending: 0, queued: 0 });
  });

  it('takes the stock of a batch spread over several vouchers all or nothing: one voucher short and nothing is written', async () => {
    const [plenty, short, third] = [
      await insertSeckillVoucher(env, { stock: 10 }),
      await insertSeckillVoucher(env, { stock: 1 }),
      await insertSeckillVoucher(env, { stock: 10 }),
    ];
    const order = (id: number, voucherId: string) => ({ orderId: String(9_000_000 + id), userId: String(5000 + id), voucherId });
    await expect(seckill.orders.persistAllNew([order(1, plenty), order(2, short), order(3, short), order(4, third)])).rejects.toBeInstanceOf(
      OutOfStockInDatabase,
    );
    expect([await mysqlStock(env, plenty), await mysqlStock(env, short), await mysqlStock(env, third)]).toEqual([10, 1, 10]);
    expect([...(await mysqlOrders(env, plenty)), ...(await mysqlOrders(env, short)), ...(await mysqlOrders(env, third))]).toEqual([]);

    await seckill.orders.persistAllNew([order(5, plenty), order(6, plenty), order(7, short), order(8, third)]);
    expect([await mysqlStock(env, plenty), await mysqlStock(env, short), await mysqlStock(env, third)]).toEqual([8, 0, 9]);
    expect((await mysqlOrders(env, plenty)).length).toBe(2);
  });
});
