import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDemoData } from '../../../src/infra/seed/load-demo-data.js';
import { startEdge, type Edge } from '../../../kit/edge.js';
import { startRedisServer, type RedisServer } from '../../../kit/redis-servers.js';
import { eventually } from '../../support/eventually.js';
import { insertSeckillVoucher } from '../../support/seckill.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../support/test-env.js';

/**
 * The edge when Redis stops answering: a Redis server of this file's own, shared by the app and the
 * edge, stopped (SIGSTOP: connections open, nothing answered) and resumed. What L1 holds is still
 * answered; what it does not hold goes to the app after the edge's Redis timeout, never a hang, and
 * the app answers as it does without the edge (503 by its deadline); when Redis answers again, so
 * does L2. The sale's refusals likewise: none while the edge cannot know its view is current.
 */
let redisServer: RedisServer;
let env: TestEnv;
let app: FastifyInstance;
let appUrl: string;
let edge: Edge;

const DEADLINE_MS = 1_500;

beforeAll(async () => {
  redisServer = await startRedisServer();
  env = await createTestEnv({ REDIS_URL: redisServer.url, REQUEST_DEADLINE_MS: String(DEADLINE_MS) });
  await loadDemoData(env.db);
  ({ app } = await buildTestApp(env));
  appUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  // L1 trusted a minute even without the push (which a stalled Redis silences too).
  edge = await startEdge(env.config, { salePool: [appUrl.replace('http://', '')], reads: { l1TtlMs: 60_000, l1UnpushedTtlMs: 60_000 } });
}, 60_000);

afterAll(async () => {
  redisServer?.resume();
  await edge?.stop();
  await app?.close();
  await env?.cleanup();
  await redisServer?.kill();
});

async function get(base: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; ms: number }> {
  const started = performance.now();
  const response = await fetch(`${base}${path}`, { headers, signal: AbortSignal.timeout(15_000) });
  return { status: response.status, body: await response.text(), ms: performance.now() - started };
}

describe('the edge with Redis stalled', () => {
  it('answers from L1, passes the rest to the app without hanging, and reads Redis again once it answers', async () => {
    expect((await get(appUrl, '/api/shop/1')).status).toBe(200); // cached in Redis by the app
    await eventually(async () => expect(await env.redis.exists('cache:shop:1')).toBe(1));
    const inL1 = await get(edge.url, '/api/shop/1');
    expect(inL1.status).toBe(200);

    redisServer.pause();
    try {
      const fromL1 = await get(edge.url, '/api/shop/1');
      expect(fromL1).toMatchObject({ status: 200, body: inL1.body });
      // Not in L1: the edge gives Redis its timeout (100 ms), then the app answers as it would alone.
      // One request id for both: the app's 503 names it.
      const asked = { 'x-request-id': 'edge-redis-stalled' };
      const [viaEdge, direct] = await Promise.all([get(edge.url, '/api/shop/2', asked), get(appUrl, '/api/shop/2', asked)]);
      console.log(`edge: with Redis stalled, an L1 hit in ${fromL1.ms.toFixed(1)} ms, a miss answered by the app in ${viaEdge.ms.toFixed(0)} ms`);
      expect(viaEdge.status).toBe(503);
      expect({ status: viaEdge.status, body: viaEdge.body }).toEqual({ status: direct.status, body: direct.body });
      // The edge's failures after the first skip Redis (back-off): still the app's answer.
      expect((await get(edge.url, '/api/shop/3')).status).toBe(503);
    } finally {
      redisServer.resume();
    }
    // Logged once, not per request.
    const warnings = (await edge.errorLog()).split('\n').filter((line) => line.includes('failed (timeout)'));
    expect(warnings).toHaveLength(1);

    // Redis answers again: the app rebuilds shop 2, and the edge answers it from Redis.
    await eventually(async () => expect((await get(appUrl, '/api/shop/2')).status).toBe(200));
    await eventually(async () => {
      const answer = await get(edge.url, '/api/shop/2');
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body).data.id).toBe('2');
    });
    await eventually(async () => expect(((await (await fetch(`${edge.url}/_edge/status`)).json()) as { push: string }).push).toBe('up'));
  });

  it('refuses no order while it cannot be sure its view of the sale is current, and refuses again once it is', async () => {
    const [first, second, third] = await createUsersWithSessions(env, 3, 17_000_000_000);
    const voucherId = await insertSeckillVoucher(env, { stock: 1 });
    const order = (base: string, token: string) =>
      fetch(`${base}/api/voucher-order/seckill/${voucherId}`, { method: 'POST', headers: { authorization: token }, signal: AbortSignal.timeout(15_000) });
    expect(await (await order(appUrl, first!.token)).json()).toMatchObject({ success: true });
    // Sold out, and known so at the edge: it answers without the app (no X-Upstream).
    await eventually(async () => expect((await order(edge.url, second!.token)).headers.get('x-upstream')).toBeNull());

    redisServer.pause();
    try {
      // Past the freshness bound (50 ms) no heartbeat has come back: the app decides (503: its Redis is stalled too).
      await new Promise((resolve) => setTimeout(resolve, 200));
      const started = performance.now();
      const passed = await order(edge.url, third!.token);
      expect(passed.headers.get('x-upstream')).not.toBeNull();
      expect(passed.status).toBe(503);
      expect(performance.now() - started).toBeLessThan(DEADLINE_MS + 5_000);
    } finally {
      redisServer.resume();
    }
    await eventually(async () => expect((await order(edge.url, third!.token)).headers.get('x-upstream')).toBeNull());
  });
});
