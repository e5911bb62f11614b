import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRedisServer, type RedisServer } from '../../../kit/redis-servers.js';
import type { Config } from '../../../src/infra/config.js';
import { createDb, type Db } from '../../../src/infra/db.js';
import { createRedis, type RedisClient } from '../../../src/infra/redis.js';
import { render } from '../../../src/lib/messages/index.js';
import { orderDeadlineMessage } from '../../../src/modules/seckill/errors/index.js';
import { loadDemoData } from '../../../src/infra/seed/load-demo-data.js';
import { ShopRepository, type ShopRow } from '../../../src/modules/shops/shop-repository.js';
import { insertSeckillVoucher } from '../../support/seckill.js';
import { stallingRelay, type StallingRelay } from '../../support/stall.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../support/test-env.js';

/**
 * A stalled Redis or MySQL costs a fast 503 + Retry-After naming it, never a hung request;
 * what does not need it keeps working; service resumes by itself when the stall ends.
 * Redis is a server of this file's own (SIGSTOP / SIGCONT) behind a relay that can hold its
 * answers; MySQL is the real one behind such a relay.
 */
const DEADLINE_MS = 1_000;
const DEPENDENCY_MS = 400;
/** An answer "within the deadline" on a busy 2-core machine. */
const FAST_MS = DEADLINE_MS + 700;

let env: TestEnv;
let server: RedisServer;
let redisRelay: StallingRelay;
let mysqlRelay: StallingRelay;
let redis: RedisClient;
let db: Db;
let app: FastifyInstance;
let token: string;
let logs = '';
let baseConfig: Config;
const slowLoads = new Set<string>();
let logger: { level: string; stream: Writable };

class SlowShopRepository extends ShopRepository {
  override async findById(id: string): Promise<ShopRow | undefined> {
    if (slowLoads.has(id)) await sleep(DEADLINE_MS * 3);
    return super.findById(id);
  }
}

beforeAll(async () => {
  env = await createTestEnv();
  await loadDemoData(env.db);
  server = await startRedisServer();
  redisRelay = await stallingRelay(server.port);
  mysqlRelay = await stallingRelay(Number(new URL(env.mysqlUrl).port || 3306));
  const mysqlUrl = new URL(env.mysqlUrl);
  mysqlUrl.port = String(mysqlRelay.port);
  const config: Config = {
    ...env.config,
    redisUrl: `redis://127.0.0.1:${redisRelay.port}/0`,
    mysqlUrl: mysqlUrl.toString(),
    deadlines: { requestMs: DEADLINE_MS, redisCommandMs: DEPENDENCY_MS, mysqlQueryMs: DEPENDENCY_MS, mysqlConnectMs: DEPENDENCY_MS },
  };
  baseConfig = config;
  redis = createRedis(config, { onError: () => undefined });
  db = createDb({ mysqlUrl: config.mysqlUrl, poolSize: 3, timeouts: { queryMs: DEPENDENCY_MS, connectMs: DEPENDENCY_MS } });
  const logStream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs += chunk.toString();
      done();
    },
  });
  ({ app } = await buildTestApp({ ...env, config, redis, db }, undefined, {
    shopRepository: new SlowShopRepository(db),
    logger: { level: 'warn', stream: logStream },
  }));
  logger = { level: 'warn', stream: logStream };
  [{ token }] = (await createUsersWithSessions({ ...env, redis }, 1)) as [{ id: string; token: string }];
}, 60_000);

afterEach(() => {
  server.resume();
  redisRelay.resume();
  mysqlRelay.resume();
});

afterAll(async () => {
  await app?.close();
  await redisRelay?.close();
  await mysqlRelay?.close();
  if (redis) redis.disconnect();
  await db?.destroy();
  await server?.kill();
  await env?.cleanup();
});

async function timed(request: InjectOptions) {
  const started = Date.now();
  const response = await app.inject(request);
  return { response, elapsedMs: Date.now() - started, body: response.json<{ success: boolean; errorMsg?: string; data?: Record<string, unknown> }>() };
}

const me = { method: 'GET' as const, url: '/api/user/me', headers: { authorization: '' } };

describe('a stalled Redis', () => {
  it('costs requests that need it a fast 503 + Retry-After naming Redis; health says Redis is stalled; SIGCONT and the next request is 200', async () => {
    me.headers.authorization = token;
    expect((await timed(me)).response.statusCode).toBe(200);
    const [unread] = await createUsersWithSessions({ ...env, redis }, 1, 15_000_000_500);

    server.pause();
    // A session this instance has read is answered from its near cache (no Redis needed, until
    // the stalled invalidation connection fails its health PING and flushes it); one it has not
    // read needs Redis.
    expect((await timed(me)).response.statusCode).toBe(200);
    const stalled = await timed({ ...me, headers: { authorization: unread!.token } });
    expect(stalled.response.statusCode).toBe(503);
    expect(stalled.response.headers['retry-after']).toBe('1');
    expect(stalled.body.errorMsg).toMatch(/^Redis is not answering in time, please retry/);
    expect(stalled.elapsedMs).toBeLessThan(FAST_MS);

    const health = await timed({ method: 'GET', url: '/api/health' });
    expect(health.response.statusCode).toBe(503);
    expect(health.body.data).toMatchObject({ redis: 'stalled', mysql: 'up' });
    expect(health.body.errorMsg).toContain('Redis is not answering in time');
    expect(health.elapsedMs).toBeLessThan(FAST_MS);

    // What needs no Redis keeps working: the API documentation.
    expect((await timed({ method: 'GET', url: '/docs/json' })).response.statusCode).toBe(200);

    server.resume();
    const resumed = await timed(me);
    expect(resumed.response.statusCode).toBe(200);
    expect((await timed({ method: 'GET', url: '/api/health' })).response.statusCode).toBe(200);
  }, 30_000);

  it('answers a seckill order whose reserve script ran but whose answer never came 503 "outcome unknown", and the order is then found', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 5 });
    // Publish the sale first, so the next reserve is the one call that carries the stream key.
    const warmup = await createUsersWithSessions({ ...env, redis }, 1, 16_000_000_000);
    await app.inject({ method: 'POST', url: `/api/voucher-order/seckill/${voucherId}`, headers: { authorization: warmup[0]!.token } });

    const reserveSent = redisRelay.stallAfter(':orders');
    const pending = timed({ method: 'POST', url: `/api/voucher-order/seckill/${voucherId}`, headers: { authorization: token } });
    await reserveSent;
    const { response, body, elapsedMs } = await pending;
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('1');
    expect(body.success).toBe(false);
    expect(body.errorMsg).toContain('The outcome of this order is unknown (Redis did not answer)');
    expect(elapsedMs).toBeLessThan(FAST_MS);
    const orderId = /placed as order (\d+)/.exec(body.errorMsg ?? '')?.[1];
    expect(orderId).toBeDefined();

    redisRelay.resume();
    const byId = await app.inject({ method: 'GET', url: `/api/voucher-order/${orderId!}`, headers: { authorization: token } });
    expect(byId.statusCode).toBe(200);
    expect(byId.json()).toMatchObject({ success: true, data: { id: orderId, voucherId, state: 'queued' } });
    const byVoucher = await app.inject({ method: 'GET', url: `/api/voucher-order/of/me/voucher/${voucherId}`, headers: { authorization: token } });
    expect(byVoucher.json()).toMatchObject({ success: true, data: { voucherId, state: 'queued' } });
    const [stranger] = await createUsersWithSessions({ ...env, redis }, 1, 17_000_000_000);
    const none = await app.inject({ method: 'GET', url: `/api/voucher-order/of/me/voucher/${voucherId}`, headers: { authorization: stranger!.token } });
    expect(none.statusCode).toBe(404);
    expect(none.json()).toMatchObject({ success: false, errorMsg: `You have no order for voucher ${voucherId}` });
    // A second try is told the truth: the user already has this order.
    const again = await app.inject({ method: 'POST', url: `/api/voucher-order/seckill/${voucherId}`, headers: { authorization: token } });
    expect(again.json()).toMatchObject({ success: false, errorMsg: 'You already have an order for this voucher' });
  }, 30_000);
});

describe('a stalled MySQL', () => {
  it('costs what needs it a fast 503 naming MySQL, keeps cached shops served, and the pool recovers when MySQL answers again', async () => {
    expect((await timed({ method: 'GET', url: '/api/shop/1' })).response.statusCode).toBe(200); // now cached in Redis

    mysqlRelay.stall();
    const cached = await timed({ method: 'GET', url: '/api/shop/1' });
    expect(cached.response.statusCode).toBe(200);
    // More uncached loads than the pool has connections: the queue for a connection is bounded too.
    const uncached = await Promise.all(['2', '3', '4', '5', '6', '7'].map((id) => timed({ method: 'GET', url: `/api/shop/${id}` })));
    for (const { response, body, elapsedMs } of uncached) {
      expect(response.statusCode).toBe(503);
      expect(response.headers['retry-after']).toBe('1');
      expect(body.errorMsg).toMatch(/^MySQL is not answering in time, please retry/);
      expect(elapsedMs).toBeLessThan(FAST_MS);
    }
    const health = await timed({ method: 'GET', url: '/api/health' });
    expect(health.response.statusCode).toBe(503);
    expect(health.body.data).toMatchObject({ redis: 'up', mysql: 'stalled' });
    expect(health.body.errorMsg).toContain('MySQL is not answering in time');

    mysqlRelay.resume();
    // The timed-out connections were dropped: fresh ones serve the same requests.
    for (const id of ['2', '3', '4', '5', '6', '7']) expect((await timed({ method: 'GET', url: `/api/shop/${id}` })).response.statusCode).toBe(200);
    expect((await timed({ method: 'GET', url: '/api/health' })).response.statusCode).toBe(200);
  }, 30_000);
});

describe('the request deadline', () => {
  it('answers a handler still running at the deadline 503 + Retry-After, drops its late result quietly and keeps serving', async () => {
    slowLoads.add('8');
    const slow = await timed({ method: 'GET', url: '/api/shop/8' });
    expect(slow.response.statusCode).toBe(503);
    expect(slow.response.headers['retry-after']).toBe('1');
    expect(slow.body.errorMsg).toContain(`No answer within ${DEADLINE_MS} ms`);
    expect(slow.elapsedMs).toBeGreaterThanOrEqual(DEADLINE_MS - 50);
    expect(slow.elapsedMs).toBeLessThan(FAST_MS);

    await sleep(DEADLINE_MS * 3); // the load finishes; its result has nowhere to go
    slowLoads.delete('8');
    expect((await timed({ method: 'GET', url: '/api/shop/9' })).response.statusCode).toBe(200);
    expect(logs).toContain('request deadline passed');
    expect(logs).not.toMatch(/already sent|Promise errored/);
  }, 30_000);

  it('says on the order route that the outcome is unknown and names the order id issued, which then tells the order; a handler failing after it is a warning, not an error', async () => {
    const { app: impatient, close } = await impatientApp();
    try {
      const voucherId = await insertSeckillVoucher(env, { stock: 5 });
      const [buyer, warmup] = await createUsersWithSessions({ ...env, redis }, 2, 18_000_000_000);
      // Publish the sale first (a first order does), so the stalled reserve is one that can accept.
      await app.inject({ method: 'POST', url: `/api/voucher-order/seckill/${voucherId}`, headers: { authorization: warmup!.token } });
      const reserveSent = redisRelay.stallAfter(':orders');
      const started = Date.now();
      const pending = impatient.inject({ method: 'POST', url: `/api/voucher-order/seckill/${voucherId}`, headers: { authorization: buyer!.token } });
      await reserveSent;
      const response = await pending;
      expect(response.statusCode).toBe(503);
      expect(response.headers['retry-after']).toBe('1');
      const { errorMsg } = response.json<{ errorMsg: string }>();
      const orderId = /placed as order (\d+)/.exec(errorMsg)?.[1];
      if (orderId === undefined) expect.fail(`no order id in: ${errorMsg}`);
      expect(errorMsg).toContain(render(orderDeadlineMessage(voucherId, orderId), 'en'));
      expect(Date.now() - started).toBeLessThan(1_400);

      await sleep(1_500); // reserve.lua's own timeout fires: OutcomeUnknown, after the answer
      expect(logs).toContain('request failed after its deadline answered 503');
      expect(logs).not.toMatch(/already sent|Promise errored/);
      redisRelay.resume();
      // The id the answer named is the order's: its owner looks it up by that id, or by the voucher.
      const byId = await app.inject({ method: 'GET', url: `/api/voucher-order/${orderId}`, headers: { authorization: buyer!.token } });
      expect(byId.json()).toMatchObject({ success: true, data: { id: orderId, voucherId, state: 'queued' } });
      const byVoucher = await app.inject({ method: 'GET', url: `/api/voucher-order/of/me/voucher/${voucherId}`, headers: { authorization: buyer!.token } });
      expect(byVoucher.json()).toMatchObject({ success: true, data: { voucherId, state: 'queued' } });
    } finally {
      await close();
    }
  }, 30_000);

  it('names no order id on the order route when the deadline passes before one was issued', async () => {
    const { app: impatient, close } = await impatientApp();
    try {
      const voucherId = await insertSeckillVoucher(env, { stock: 5 });
      const [buyer] = await createUsersWithSessions({ ...env, redis }, 1, 18_100_000_000);
      // This instance has not read the session: the request waits for Redis before the handler runs.
      redisRelay.stall();
      const response = await impatient.inject({ method: 'POST', url: `/api/voucher-order/seckill/${voucherId}`, headers: { authorization: buyer!.token } });
      expect(response.statusCode).toBe(503);
      const { errorMsg } = response.json<{ errorMsg: string }>();
      expect(errorMsg).toContain(render(orderDeadlineMessage(voucherId), 'en'));
      expect(errorMsg).not.toMatch(/placed as order/);
    } finally {
      redisRelay.resume();
      await close();
    }
  }, 30_000);
});

/** An app whose request deadline passes while a Redis command still waits (Redis's own bound is longer). */
async function impatientApp(): Promise<{ app: FastifyInstance; close: () => Promise<void> }> {
  const config: Config = { ...baseConfig, deadlines: { ...baseConfig.deadlines, requestMs: 600, redisCommandMs: 1_500 } };
  const slowRedis = createRedis(config, { onError: () => undefined });
  const { app: impatient } = await buildTestApp({ ...env, config, redis: slowRedis, db }, undefined, { logger });
  await slowRedis.ping();
  return {
    app: impatient,
    close: async () => {
      await impatient.close();
      slowRedis.disconnect();
    },
  };
}
