import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSeckill } from '../../../../src/modules/seckill/index.js';
import { unpaidDueKey } from '../../../../src/modules/seckill/keys.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';
import { buy, insertSeckillVoucher, mysqlOrders } from '../../../support/seckill.js';

let env: TestEnv;
let app: FastifyInstance;
let users: Array<{ id: string; token: string }>;
/** The order worker, run by hand: MySQL gets the order only when the test says so. */
let seckill: ReturnType<typeof buildSeckill>;

beforeAll(async () => {
  env = await createTestEnv();
  users = await createUsersWithSessions(env, 2, 15_710_000_000);
  app = (await buildTestApp(env)).app;
  seckill = buildSeckill({ config: env.config, redis: env.redis, db: env.db, consumerName: 'accept-time-test', log: pino({ level: 'silent' }) });
});

afterAll(async () => {
  await app?.close();
  await seckill?.close();
  await env?.cleanup();
});

describe("an order's create_time is when the sale accepted it", () => {
  it('written 1.5 s after acceptance: create_time is the acceptance time (ms) and the payment window counts from it', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 5 });
    const user = users[0]!;
    const answer = await buy(app, user.token, voucherId);
    expect(answer.json()).toMatchObject({ success: true });
    const orderId = answer.json().data as string;
    const queued = (await app.inject({ url: `/api/voucher-order/${orderId}`, headers: { authorization: user.token } })).json().data;
    expect(queued.state).toBe('queued');
    const acceptedMs = Date.parse(queued.createTime as string);
    await sleep(1500); // MySQL kept from writing it (the worker does not run)
    await seckill.worker.drainOnce();
    const [row] = await mysqlOrders(env, voucherId);
    expect(row?.id).toBe(orderId);
    expect(row!.create_time.getTime()).toBe(acceptedMs);
    const written = (await app.inject({ url: `/api/voucher-order/${orderId}`, headers: { authorization: user.token } })).json().data;
    expect(written).toMatchObject({ state: 'created', createTime: queued.createTime });
    const dueMs = Number(await env.redis.zscore(unpaidDueKey(seckill.keys.shardOf(voucherId)), `${orderId}:${user.id}:${voucherId}:1`));
    expect(dueMs).toBe(acceptedMs + env.config.seckill.paymentWindowSeconds * 1000);
  });
});
