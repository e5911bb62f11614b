import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDemoData } from '../../../src/infra/seed/load-demo-data.js';
import { startEdge, type Edge } from '../../../kit/edge.js';
import { startRedisServer, type RedisServer } from '../../../kit/redis-servers.js';
import { buildTestApp, createTestEnv, type TestEnv } from '../../support/test-env.js';

/**
 * Concurrent L2 reads of one key in an nginx worker share one Redis GET (edge/lua/hmdp/edge/l2.lua):
 * the first reader fetches, the others wait for its answer. A Redis server of this file's own, so
 * that its GETs are counted (INFO commandstats) and it can be held still (SIGSTOP) while the
 * requests come in; an edge with L1 off (its entries' life 0), so that every read is an L2 read.
 */
let redisServer: RedisServer;
let counter: Redis;
let env: TestEnv;
let app: FastifyInstance;
let appUrl: string;
let edge: Edge;

const REDIS_TIMEOUT_MS = 1_500;
const CONCURRENT = 40;

beforeAll(async () => {
  redisServer = await startRedisServer();
  counter = new Redis(redisServer.url);
  // The app answers 503 within its deadline while Redis is held still (the last test).
  env = await createTestEnv({ REDIS_URL: redisServer.url, REQUEST_DEADLINE_MS: '1000' });
  await loadDemoData(env.db);
  ({ app } = await buildTestApp(env));
  appUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  edge = await startEdge(env.config, {
    salePool: [appUrl.replace('http://', '')],
    reads: { l1TtlMs: 0, push: false, redisTimeoutMs: REDIS_TIMEOUT_MS, redisBackoffMs: 1 },
  });
}, 60_000);

afterAll(async () => {
  redisServer?.resume();
  await edge?.stop();
  await app?.close();
  await env?.cleanup();
  counter?.disconnect();
  await redisServer?.kill();
});

interface Answer {
  status: number;
  body: string;
  contentType: string | null;
  /** nginx names the upstream when the app answered. */
  byApp: boolean;
}

async function get(base: string, path: string): Promise<Answer> {
  const response = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(15_000) });
  return {
    status: response.status,
    body: await response.text(),
    contentType: response.headers.get('content-type'),
    byApp: Boolean(response.headers.get('x-upstream')),
  };
}

/** GETs the server has answered so far (INFO commandstats). */
async function redisGets(): Promise<number> {
  const stats = await counter.info('commandstats');
  return Number(/cmdstat_get:calls=(\d+)/.exec(stats)?.[1] ?? 0);
}

/** `count` requests at once while Redis is held still for `holdMs`: all of them arrive during the hold. */
async function burstWhileHeld(path: string, count: number, holdMs: number): Promise<Answer[]> {
  redisServer.pause();
  try {
    const answers = Array.from({ length: count }, () => get(edge.url, path));
    await new Promise((resolve) => setTimeout(resolve, holdMs));
    redisServer.resume();
    return await Promise.all(answers);
  } finally {
    redisServer.resume();
  }
}

describe('L2 reads coalesced per worker', () => {
  it("answers many concurrent reads of one shop with fewer GETs than requests, each the app's answer", async () => {
    const path = '/api/shop/1';
    const expected = await get(appUrl, path); // the app caches the record
    expect(expected.status).toBe(200);
    expect(await get(edge.url, path)).toEqual({ ...expected, byApp: false });
    const before = await redisGets();
    // Held still well within the edge's Redis timeout: the first read's GET waits, the others join it.
    const answers = await burstWhileHeld(path, CONCURRENT, 200);
    const gets = (await redisGets()) - before;
    console.log(`edge: ${CONCURRENT} concurrent L2 reads of one shop cost ${gets} Redis GET(s)`);
    for (const answer of answers) expect(answer).toEqual({ ...expected, byApp: false });
    expect(gets).toBeGreaterThanOrEqual(1);
    expect(gets).toBeLessThan(CONCURRENT);
  });

  it('sends the readers that waited to the app when the one GET fails', async () => {
    const path = '/api/shop/2';
    expect((await get(appUrl, path)).status).toBe(200);
    // Held still longer than the edge's timeout: the GET fails, and every waiter goes to the app
    // (whose own Redis read ends at its deadline).
    const answers = await burstWhileHeld(path, 10, REDIS_TIMEOUT_MS + 700);
    for (const answer of answers) expect(answer.byApp).toBe(true);
    const warnings = (await edge.errorLog()).split('\n').filter((line) => line.includes('failed (timeout)'));
    expect(warnings).toHaveLength(1);
  });
});
