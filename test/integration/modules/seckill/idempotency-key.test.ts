import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../../../src/infra/config.js';
import { buildSeckill } from '../../../../src/modules/seckill/index.js';
import { REFUSALS } from '../../../../src/modules/seckill/messages.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';
import { buy, insertSeckillVoucher, mysqlOrders, mysqlStock } from '../../../support/seckill.js';

let env: TestEnv;
let asyncApp: FastifyInstance;
let syncApp: FastifyInstance;
let users: Array<{ id: string; token: string }>;
/** The order worker, run by hand. */
let seckill: ReturnType<typeof buildSeckill>;

const withStrategy = (config: Config, strategy: 'async' | 'sync'): Config => ({ ...config, seckill: { ...config.seckill, strategy } });

beforeAll(async () => {
  env = await createTestEnv({ SECKILL_STREAM_SHARDS: '2' });
  users = await createUsersWithSessions(env, 20, 15_710_000_000);
  asyncApp = (await buildTestApp(env, undefined, { config: withStrategy(env.config, 'async') })).app;
  syncApp = (await buildTestApp(env, undefined, { config: withStrategy(env.config, 'sync') })).app;
  seckill = buildSeckill({ config: env.config, redis: env.redis, db: env.db, consumerName: 'idempotency-test', log: pino({ level: 'silent' }) });
});

afterAll(async () => {
  await asyncApp?.close();
  await syncApp?.close();
  await seckill?.close();
  await env?.cleanup();
});

const order = (app: FastifyInstance, token: string, voucherId: string, key: string) =>
  app.inject({ method: 'POST', url: `/api/voucher-order/seckill/${voucherId}`, headers: { authorization: token, 'idempotency-key': key } });

async function drain(voucherId: string, expected: number): Promise<void> {
  for (let round = 0; round < 50 && (await mysqlOrders(env, voucherId)).length < expected; round += 1) await seckill.worker.drainOnce();
}

describe('Idempotency-Key on POST /api/voucher-order/seckill/{id}', () => {
  it('a retry with the same key returns the same order, never "already bought" nor a second order', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 10 });
    const token = users[0]!.token;
    const first = (await order(asyncApp, token, voucherId, 'retry-1')).json();
    expect(first).toMatchObject({ success: true });
    expect((await order(asyncApp, token, voucherId, 'retry-1')).json()).toEqual(first);
    await drain(voucherId, 1);
    expect((await order(asyncApp, token, voucherId, 'retry-1')).json()).toEqual(first); // once written, too
    // Without a key (or with another one) the rule applies as before.
    expect((await buy(asyncApp, token, voucherId)).json().errorMsg).toBe(REFUSALS.alreadyBought);
    expect((await order(asyncApp, token, voucherId, 'retry-2')).json().errorMsg).toBe(REFUSALS.alreadyBought);
    expect((await mysqlOrders(env, voucherId)).map((row) => row.id)).toEqual([first.data]);
    expect(await mysqlStock(env, voucherId)).toBe(9);
  });

  it('20 concurrent duplicates with one key (async and sync instances): one order, one id for all', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 10 });
    const token = users[1]!.token;
    const bodies = (await Promise.all(Array.from({ length: 20 }, (_, i) => order(i % 2 === 0 ? asyncApp : syncApp, token, voucherId, 'double-click')))).map(
      (response) => response.json<Record<string, unknown>>(),
    );
    // A sync request may give up waiting for the user's lock ("busy"): a refusal that takes nothing.
    const accepted = bodies.filter((body) => body.success);
    expect(bodies.filter((body) => !body.success).every((body) => body.errorMsg === REFUSALS.busy)).toBe(true);
    expect(new Set(accepted.map((body) => body.data)).size).toBe(1);
    await drain(voucherId, 1);
    expect((await mysqlOrders(env, voucherId)).map((row) => row.id)).toEqual([accepted[0]!.data]);
    expect((await seckill.sale.reads.read(voucherId))?.stock).toBe(9);
  });

  it('through the sync strategy: written once, the retry answers the same id', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 10 });
    const token = users[2]!.token;
    const first = (await order(syncApp, token, voucherId, 'sync-key')).json();
    expect(first).toMatchObject({ success: true });
    expect((await mysqlOrders(env, voucherId)).map((row) => row.id)).toEqual([first.data]);
    expect((await order(syncApp, token, voucherId, 'sync-key')).json()).toEqual(first);
    expect((await order(asyncApp, token, voucherId, 'sync-key')).json()).toEqual(first);
    expect(await mysqlOrders(env, voucherId)).toHaveLength(1);
  });

  it('the same key for another voucher is refused 422 (vouchers on different shards too)', async () => {
    const [a, b] = [await insertSeckillVoucher(env, { stock: 5 }), await insertSeckillVoucher(env, { stock: 5 })];
    expect(seckill.keys.shardOf(a)).not.toBe(seckill.keys.shardOf(b)); // consecutive ids, two shards
    const token = users[3]!.token;
    expect((await order(asyncApp, token, a, 'one-key')).json()).toMatchObject({ success: true });
    const reused = await order(asyncApp, token, b, 'one-key');
    expect(reused.statusCode).toBe(422);
    expect(reused.json().errorMsg).toBe(REFUSALS.idempotencyKeyReused(a));
    // Another user may use the same key text.
    expect((await order(asyncApp, users[4]!.token, b, 'one-key')).json()).toMatchObject({ success: true });
  });

  it('a retry after the voucher sold out (known in memory) still returns its order', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 1 });
    const first = (await order(asyncApp, users[5]!.token, voucherId, 'last-unit')).json();
    expect((await buy(asyncApp, users[6]!.token, voucherId)).json().errorMsg).toBe(REFUSALS.soldOut);
    expect((await buy(asyncApp, users[6]!.token, voucherId)).json().errorMsg).toBe(REFUSALS.soldOut);
    expect((await order(asyncApp, users[5]!.token, voucherId, 'last-unit')).json()).toEqual(first);
  });

  it('a retry after an outcome-unknown answer returns the order if reserve.lua had accepted it', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 5 });
    const user = users[7]!;
    // The first request bound its key and ran the script; its answer was lost (the 503 case).
    await seckill.sale.publisher.publish({ voucherId, stock: 5, begin: new Date(Date.now() - 60_000), end: new Date(Date.now() + 3600_000) });
    expect(await seckill.sale.idempotencyKeys.bind(user.id, 'lost-answer', voucherId)).toEqual({ bound: true });
    expect(await seckill.sale.batches.reserve({ orderId: '8000000000000001', userId: user.id, voucherId, idempotencyKey: 'lost-answer' })).toMatchObject({
      outcome: 'accepted',
      slot: 1,
    });
    expect((await order(asyncApp, user.token, voucherId, 'lost-answer')).json()).toMatchObject({ success: true, data: '8000000000000001' });
    expect((await seckill.sale.reads.read(voucherId))?.stock).toBe(4);
  });

  it('refuses a malformed key with a 400', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 5 });
    for (const bad of ['', 'x'.repeat(65), 'has space', 'tab\tkey', 'é']) {
      const response = await order(asyncApp, users[8]!.token, voucherId, bad);
      expect(response.statusCode, JSON.stringify(bad)).toBe(400);
      expect(response.json().errorMsg).toMatch(/idempotency-key/);
    }
    expect(await mysqlStock(env, voucherId)).toBe(5);
    expect((await order(asyncApp, users[8]!.token, voucherId, 'x'.repeat(64))).json()).toMatchObject({ success: true });
  });
});
