import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SaleKeys } from '../../../../src/modules/seckill/keys.js';
import { REFUSALS } from '../../../../src/modules/seckill/messages.js';
import { buildSale, type Sale } from '../../../../src/modules/seckill/sale/sale.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';
import { HOUR, buy, expectSoldOutExactly, insertSeckillVoucher, mysqlOrders, mysqlStock } from '../../../support/seckill.js';

let env: TestEnv;
let instances: FastifyInstance[];
let users: Array<{ id: string; token: string }>;
let sale: Sale;

beforeAll(async () => {
  env = await createTestEnv({ SECKILL_STRATEGY: 'sync', MYSQL_POOL_SIZE: '20' });
  users = await createUsersWithSessions(env, 1000);
  instances = [(await buildTestApp(env)).app, (await buildTestApp(env)).app];
  sale = buildSale(env.redis, new SaleKeys(env.config.seckill.streamShards));
});

afterAll(async () => {
  for (const app of instances ?? []) await app.close();
  await env?.cleanup();
});

/** The sale's Redis keys of a voucher: nothing queued, held or streamed once every answer is in. */
async function expectNothingInFlight(voucherId: string): Promise<void> {
  const keys = sale.keys.voucher(voucherId);
  expect(await env.redis.zcard(keys.inFlight)).toBe(0);
  expect(await env.redis.hlen(keys.queued)).toBe(0);
  expect(await env.redis.xlen(keys.stream)).toBe(0);
}

describe('sync seckill (Redis decides as for async, per-user lock + MySQL transaction before the answer)', () => {
  it('2,000 concurrent requests from 1,000 users on stock 100: exactly 100 orders, all written before the answer', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 100 });
    const responses = await Promise.all(Array.from({ length: 2000 }, (_, i) => buy(instances[i % 2]!, users[i % 1000]!.token, voucherId)));
    const bodies = responses.map((response) => response.json());
    expect(responses.every((response) => response.statusCode === 200)).toBe(true);
    const accepted = bodies.filter((body) => body.success).map((body) => body.data as string);
    const refusals = new Set(bodies.filter((body) => !body.success).map((body) => body.errorMsg));
    // A user's second request may also time out waiting for that user's lock on a loaded machine
    // ("busy"): a refusal like the others, it takes nothing.
    const expected = new Set([REFUSALS.soldOut, REFUSALS.alreadyBought, REFUSALS.busy]);
    expect([...refusals].filter((message) => !expected.has(message))).toEqual([]);
    // Written before the answer, and Redis (which decided) agrees: stock 0, nothing left in flight.
    await expectSoldOutExactly(env, voucherId, 100, accepted, async () => (await sale.reads.read(voucherId))?.stock);
    await expectNothingInFlight(voucherId);
  });

  it('one user sending 50 concurrent requests gets exactly one order', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 10 });
    const responses = await Promise.all(Array.from({ length: 50 }, (_, i) => buy(instances[i % 2]!, users[0]!.token, voucherId)));
    const bodies = responses.map((response) => response.json());
    expect(bodies.filter((body) => body.success)).toHaveLength(1);
    expect(bodies.filter((body) => body.errorMsg === REFUSALS.alreadyBought)).toHaveLength(49);
    expect(await mysqlOrders(env, voucherId)).toHaveLength(1);
    expect(await mysqlStock(env, voucherId)).toBe(9);
    expect((await sale.reads.read(voucherId))?.stock).toBe(9);
    await expectNothingInFlight(voucherId);
  });

  it('refuses before and after the window with the stock untouched', async () => {
    const early = await insertSeckillVoucher(env, { stock: 5, begin: new Date(Date.now() + HOUR), end: new Date(Date.now() + 2 * HOUR) });
    const late = await insertSeckillVoucher(env, { stock: 5, begin: new Date(Date.now() - 2 * HOUR), end: new Date(Date.now() - HOUR) });
    expect((await buy(instances[0]!, users[1]!.token, early)).json().errorMsg).toBe(REFUSALS.notStarted);
    expect((await buy(instances[0]!, users[1]!.token, late)).json().errorMsg).toBe(REFUSALS.ended);
    expect(await mysqlStock(env, early)).toBe(5);
    expect(await mysqlStock(env, late)).toBe(5);
    const order = (await buy(instances[1]!, users[1]!.token, '424242')).statusCode;
    expect(order).toBe(404);
  });
});
