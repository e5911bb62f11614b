import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../../src/infra/config.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, metricsAuth, type TestEnv } from '../../support/test-env.js';
import { insertSeckillVoucher } from '../../support/seckill.js';

/**
 * The rate limits of issue #10 against real Redis: per user and per IP on order placement, the
 * per-sale admission rate across two instances, the general per-IP API limit
 * (@fastify/rate-limit) and the code-sending limits switched off with 0.
 */
let env: TestEnv;
let users: Array<{ id: string; token: string }>;
const apps: FastifyInstance[] = [];

beforeAll(async () => {
  env = await createTestEnv();
  users = await createUsersWithSessions(env, 200, 15_300_000_000);
});

afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()));
  await env?.cleanup();
});

async function appWith(changes: { rateLimit?: Partial<Config['rateLimit']>; auth?: Partial<Config['auth']> }): Promise<FastifyInstance> {
  const config: Config = {
    ...env.config,
    rateLimit: { ...env.config.rateLimit, ...changes.rateLimit },
    auth: { ...env.config.auth, ...changes.auth },
  };
  const { app } = await buildTestApp({ ...env, config });
  apps.push(app);
  return app;
}

function order(app: FastifyInstance, token: string, voucherId: string, remoteAddress = '127.0.0.1') {
  return app.inject({ method: 'POST', url: `/api/voucher-order/seckill/${voucherId}`, headers: { authorization: token }, remoteAddress });
}

function metricValue(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name}{${labels}}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

function unlabelled(text: string, name: string): number {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

/** Waits until a Redis second has just begun (the admission limiter counts Redis seconds). */
async function startOfRedisSecond(): Promise<void> {
  const [, micros] = await env.redis.time();
  await sleep(1000 - Math.floor(Number(micros) / 1000) + 20);
}

describe('order placement: per user and per IP', () => {
  it('refuses a user over ORDER_RATE_LIMIT_PER_USER with 429, Retry-After and {success:false, errorMsg}, and lets them in after the window', async () => {
    const app = await appWith({ rateLimit: { orderPerUser: 2, orderPerIp: 0 } });
    const voucherId = await insertSeckillVoucher(env, { stock: 100 });
    const [user] = users;
    expect((await order(app, user!.token, voucherId)).json()).toMatchObject({ success: true });
    expect((await order(app, user!.token, voucherId)).json()).toMatchObject({ success: false, errorMsg: expect.stringContaining('already') });
    const refused = await order(app, user!.token, voucherId);
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toEqual({ success: false, errorMsg: expect.stringMatching(/^Too many order requests from your account: try again in 1 s$/) });
    expect(refused.headers['retry-after']).toBe('1');
    // Another user is not affected.
    expect((await order(app, users[1]!.token, voucherId)).statusCode).toBe(200);

    await sleep(1_100);
    const later = await order(app, user!.token, voucherId);
    expect(later.statusCode).toBe(200);
    expect(later.json().errorMsg).toContain('already');

    const metrics = (await app.inject({ url: '/metrics', headers: metricsAuth })).body;
    expect(metricValue(metrics, 'rate_limit_rejections_total', 'limit="order:user"')).toBe(1);
    // Checked in Redis: the user's second and third requests (each buyer's first of a second passes
    // on the local burst), one at a time, so two script calls of one event each.
    expect(unlabelled(metrics, 'rate_limit_check_batch_size_count')).toBe(2);
    expect(unlabelled(metrics, 'rate_limit_check_batch_size_sum')).toBe(2);
  });

  it('refuses a client IP over ORDER_RATE_LIMIT_PER_IP across users, not other IPs', async () => {
    const app = await appWith({ rateLimit: { orderPerUser: 0, orderPerIp: 5 } });
    const voucherId = await insertSeckillVoucher(env, { stock: 100 });
    const buyers = users.slice(10, 16);
    for (const buyer of buyers.slice(0, 5)) expect((await order(app, buyer.token, voucherId, '10.9.0.1')).statusCode).toBe(200);
    const sixth = await order(app, buyers[5]!.token, voucherId, '10.9.0.1');
    expect(sixth.statusCode).toBe(429);
    expect(sixth.json().errorMsg).toContain('from this address');
    expect(Number(sixth.headers['retry-after'])).toBe(1);
    expect((await order(app, buyers[5]!.token, voucherId, '10.9.0.2')).json()).toMatchObject({ success: true });
    await sleep(1_100);
    expect((await order(app, users[17]!.token, voucherId, '10.9.0.1')).statusCode).toBe(200);
  });

  it('turns every order limit off at 0', async () => {
    const app = await appWith({ rateLimit: { orderPerUser: 0, orderPerIp: 0, saleAdmissionPerSecond: 0 } });
    const voucherId = await insertSeckillVoucher(env, { stock: 100 });
    const answers = await Promise.all(Array.from({ length: 30 }, () => order(app, users[20]!.token, voucherId)));
    expect(answers.every((answer) => answer.statusCode === 200)).toBe(true);
    expect(answers.filter((answer) => answer.json().success)).toHaveLength(1);
  });
});

describe('the per-sale admission rate (SECKILL_ADMISSION_RATE)', () => {
  it('holds across two app instances on one Redis, answers 429 beyond it, and admits again the next second', async () => {
    const rate = 20;
    const instances = [
      await appWith({ rateLimit: { orderPerUser: 0, orderPerIp: 0, saleAdmissionPerSecond: rate } }),
      await appWith({ rateLimit: { orderPerUser: 0, orderPerIp: 0, saleAdmissionPerSecond: rate } }),
    ];
    const voucherId = await insertSeckillVoucher(env, { stock: 1000 });
    const buyers = users.slice(30, 130);
    await startOfRedisSecond();
    const [before] = await env.redis.time();
    const answers = await Promise.all(buyers.map((buyer, i) => order(instances[i % 2]!, buyer.token, voucherId)));
    const [after] = await env.redis.time();
    const spanned = Number(after) - Number(before) + 1;

    const admitted = answers.filter((answer) => answer.statusCode === 200);
    const shed = answers.filter((answer) => answer.statusCode === 429);
    expect(admitted.length + shed.length).toBe(buyers.length);
    expect(admitted.length).toBeLessThanOrEqual(rate * spanned);
    if (spanned === 1) expect(admitted.length).toBe(rate);
    expect(admitted.every((answer) => answer.json().success === true)).toBe(true);
    expect(shed[0]!.json()).toEqual({ success: false, errorMsg: expect.stringContaining('Too many people are buying this voucher right now') });
    expect(shed[0]!.headers['retry-after']).toBe('1');
    // Both instances took their share from the one Redis budget.
    for (const g of [0, 1]) expect(answers.filter((answer, i) => i % 2 === g && answer.statusCode === 200).length).toBeGreaterThan(0);
    // Shed requests never reached the sale: only admitted ones are in the stream.
    const stock = Number(await env.redis.hget(`{seckill:${Number(voucherId) % env.config.seckill.streamShards}}:voucher:${voucherId}`, 'stock'));
    expect(stock).toBe(1000 - admitted.length);

    const rejections = await Promise.all(
      instances.map(async (app) =>
        metricValue((await app.inject({ url: '/metrics', headers: metricsAuth })).body, 'rate_limit_rejections_total', 'limit="sale:admission"'),
      ),
    );
    expect(rejections[0]! + rejections[1]!).toBe(shed.length);

    await startOfRedisSecond();
    expect((await order(instances[0]!, users[150]!.token, voucherId)).json()).toMatchObject({ success: true });
    expect((await order(instances[1]!, users[151]!.token, voucherId)).json()).toMatchObject({ success: true });
  });
});

describe('general per-IP API limit (@fastify/rate-limit on Redis)', () => {
  it('refuses /api requests over API_RATE_LIMIT_PER_IP per window with the API shape, leaves the order route alone, and resets', async () => {
    const app = await appWith({ rateLimit: { apiPerIp: 3, apiWindowSeconds: 1, orderPerUser: 0, orderPerIp: 0 } });
    const get = (remoteAddress: string) => app.inject({ url: '/api/health', remoteAddress });
    for (let i = 0; i < 3; i += 1) expect((await get('10.8.0.1')).statusCode).toBe(200);
    const refused = await get('10.8.0.1');
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toEqual({ success: false, errorMsg: expect.stringContaining('Too many requests from this address') });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect((await get('10.8.0.2')).statusCode).toBe(200);
    // The order route is exempt (it has its own limits).
    const voucherId = await insertSeckillVoucher(env, { stock: 10 });
    expect((await order(app, users[160]!.token, voucherId, '10.8.0.1')).statusCode).toBe(200);
    const metrics = (await app.inject({ url: '/metrics', headers: metricsAuth })).body;
    expect(metricValue(metrics, 'rate_limit_rejections_total', 'limit="api:ip"')).toBe(1);
    await sleep(1_100);
    expect((await get('10.8.0.1')).statusCode).toBe(200);
  });
});

describe('code sending limits', () => {
  it('are each off at 0', async () => {
    const app = await appWith({ auth: { smsIntervalSeconds: 0, smsDailyLimitPerPhone: 0, smsHourlyLimitPerIp: 0 } });
    for (let i = 0; i < 5; i += 1) {
      const response = await app.inject({ method: 'POST', url: '/api/user/code?phone=13911112222', remoteAddress: '10.7.0.1' });
      expect(response.statusCode).toBe(200);
    }
  });
});
