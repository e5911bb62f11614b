import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTcpProxy, type TcpProxy } from '../../../bench/faults/proxy/index.js';
import { startEdge, type Edge } from '../../../kit/edge.js';
import { startRedisServer, type RedisServer } from '../../../kit/redis-servers.js';
import { encodeValue } from '../../../src/lib/cache/codec.js';
import { createRedis, type RedisClient } from '../../../src/infra/redis.js';
import { loadDemoData } from '../../../src/infra/seed/load-demo-data.js';
import { eventually } from '../../support/eventually.js';
import { buildTestApp, createTestEnv, type TestEnv } from '../../support/test-env.js';
import { HTTP_MESSAGES } from '../../../src/http/http-messages.js';
import { render } from '../../../src/lib/messages/index.js';

/**
 * The edge through the fault proxy (bench/faults/proxy): a Redis server of this file's own, reached
 * by the app through one proxy and by the edge (its L2 reads and its push subscriber) through
 * another, so that either path, or both, is reset, stalled half-open or slowed while the other
 * works. What it proves, through the real nginx: L1 answers until its entry's life ends, then the
 * app answers (its 503 with Retry-After when its Redis is cut too, its own answer when not); no
 * request takes longer than the edge's Redis timeout plus the app's deadline; each failure is logged
 * once; a malformed or oversized record goes to the app and is answered here again once the app
 * has rebuilt it; and with the app's pool down, L1 and L2 hits are still answered. SIGSTOP of
 * Redis is redis-faults.test.ts'.
 */
let redisServer: RedisServer;
let appProxy: TcpProxy;
let edgeProxy: TcpProxy;
let env: TestEnv;
/** The test's own client, straight to the server: it writes records whatever the proxies do. */
let direct: RedisClient;
let app: FastifyInstance;
let appUrl: string;
let edge: Edge;

const DEADLINE_MS = 1_500;
const REDIS_TIMEOUT_MS = 250;
const BACKOFF_MS = 1_000;
/** How long an L1 entry is trusted while the push is down (here: whenever Redis is cut or stalled). */
const UNPUSHED_TTL_MS = 3_000;
const MAX_RECORD_BYTES = 4_096;
/**
 * The longest a request through the edge may take while a fault lasts: a connect and a command of
 * the edge's Redis, each bounded by its timeout, then the app's request deadline; plus room for a
 * busy machine. A hang would take the test's 15 s fetch timeout.
 */
const LONGEST_MS = 2 * REDIS_TIMEOUT_MS + DEADLINE_MS + 2_000;

beforeAll(async () => {
  redisServer = await startRedisServer();
  appProxy = await startTcpProxy({ host: '127.0.0.1', port: redisServer.port });
  edgeProxy = await startTcpProxy({ host: '127.0.0.1', port: redisServer.port });
  env = await createTestEnv({ REDIS_URL: `redis://127.0.0.1:${appProxy.port}`, REQUEST_DEADLINE_MS: String(DEADLINE_MS) });
  direct = createRedis({ ...env.config, redisUrl: redisServer.url });
  await loadDemoData(env.db);
  ({ app } = await buildTestApp(env));
  appUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  // L1 lives a minute while the push works, UNPUSHED_TTL_MS when it does not; no jitter.
  edge = await startEdge(env.config, {
    salePool: [appUrl.replace('http://', '')],
    redisUrl: `redis://127.0.0.1:${edgeProxy.port}`,
    reads: {
      l1TtlMs: 60_000,
      l1UnpushedTtlMs: UNPUSHED_TTL_MS,
      l1JitterPercent: 0,
      redisTimeoutMs: REDIS_TIMEOUT_MS,
      redisBackoffMs: BACKOFF_MS,
      maxRecordBytes: MAX_RECORD_BYTES,
    },
  });
  await pushIsUp();
}, 60_000);

afterAll(async () => {
  await edge?.stop();
  await app?.close();
  direct?.disconnect();
  await env?.cleanup();
  await appProxy?.close();
  await edgeProxy?.close();
  await redisServer?.kill();
});

interface Answer {
  status: number;
  body: string;
  headers: Headers;
  ms: number;
  /** The user agent the request was sent with: it finds the request's line in the access log. */
  agent: string;
}

let sent = 0;
/** Every answer through the edge, so that each test can check none took longer than LONGEST_MS. */
const throughEdge: Answer[] = [];

async function get(base: string, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  const agent = `edge-faults-${(sent += 1)}`;
  const started = performance.now();
  const response = await fetch(`${base}${path}`, { headers: { 'user-agent': agent, ...headers }, signal: AbortSignal.timeout(15_000) });
  const answer = { status: response.status, body: await response.text(), headers: response.headers, ms: performance.now() - started, agent };
  if (base === edge.url) throughEdge.push(answer);
  return answer;
}

const atEdge = (path: string, headers?: Record<string, string>) => get(edge.url, path, headers);

/**
 * Which level answered each of these requests: the access log's last field (L1, L2; "-" for the
 * app). The log is flushed every second, hence the wait.
 */
async function levelsOf(...answers: Answer[]): Promise<string[]> {
  return eventually(async () => {
    const lines = (await readFile(join(edge.prefix, 'logs/access.log'), 'utf8')).split('\n');
    return answers.map((answer) => {
      const line = lines.find((candidate) => candidate.includes(`"${answer.agent}"`));
      expect(line, `the access log's line of ${answer.agent}`).toBeDefined();
      return line!.slice(line!.lastIndexOf(' ') + 1);
    });
  }, 5_000);
}

/** The edge's warnings that contain `text`, each the message alone (nginx adds the request it came with). */
async function warnings(text: string): Promise<string[]> {
  return (await edge.errorLog())
    .split('\n')
    .filter((line) => line.includes('hmdp edge: ') && line.includes(text))
    .map((line) => line.slice(line.indexOf('hmdp edge: ')).replace(/, client: .*$/, ''));
}

const redisFailures = () => warnings(`Redis 127.0.0.1:${edgeProxy.port} failed`);

async function pushIsUp(): Promise<void> {
  await eventually(async () => expect(((await (await fetch(`${edge.url}/_edge/status`)).json()) as { push: string }).push).toBe('up'));
}

/**
 * After a fault: past the back-off of the edge's last failure (its reads go to the app until then),
 * and the push back (its heartbeats come back through Redis).
 */
async function recovered(): Promise<void> {
  await sleep(BACKOFF_MS + 100);
  await pushIsUp();
}

/** The shop in the app's Redis record (read once through the app, which caches it): its answer. */
async function cachedByApp(id: number): Promise<Answer> {
  const answer = await get(appUrl, `/api/shop/${id}`);
  expect(answer.status).toBe(200);
  await eventually(async () => expect(await direct.exists(`cache:shop:${id}`)).toBe(1));
  return answer;
}

function expectNoneSlow(): void {
  const slowest = Math.max(...throughEdge.map((answer) => answer.ms));
  console.log(`edge faults: the slowest of ${throughEdge.length} requests through the edge so far took ${slowest.toFixed(0)} ms (limit ${LONGEST_MS} ms)`);
  expect(slowest, `the slowest request through the edge (limit ${LONGEST_MS} ms)`).toBeLessThan(LONGEST_MS);
}

/** The app's 503 of a request it could not answer by its deadline, or with its Redis failing. */
function expectAppUnavailable(answer: Answer): void {
  expect(answer.status).toBe(503);
  expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
}

describe('the edge with its Redis reset (connections reset, new ones refused)', () => {
  it('answers from L1 until the entry ends, then passes to the app; logs each failure once', async () => {
    const shop1 = await cachedByApp(1);
    const filled = await atEdge('/api/shop/1');
    expect(filled.body).toBe(shop1.body);
    const filledAt = performance.now();

    // Only the edge's path cut: L1 answers; what it does not hold, the app answers from its Redis.
    edgeProxy.cut();
    try {
      const fromL1 = await atEdge('/api/shop/1');
      expect({ status: fromL1.status, body: fromL1.body }).toEqual({ status: 200, body: shop1.body });
      const shop3 = await cachedByApp(3);
      const fromApp = await atEdge('/api/shop/3');
      expect({ status: fromApp.status, body: fromApp.body }).toEqual({ status: 200, body: shop3.body });

      // Both cut: a miss gets the app's 503, and so does one after the edge's back-off.
      appProxy.cut();
      const miss = await atEdge('/api/shop/2');
      expectAppUnavailable(miss);
      console.log(`edge faults: with Redis reset, an L1 hit in ${fromL1.ms.toFixed(1)} ms, a miss answered by the app in ${miss.ms.toFixed(0)} ms`);
      await sleep(BACKOFF_MS + 200); // past the back-off: the next miss tries Redis again, and fails again
      expectAppUnavailable(await atEdge('/api/shop/2'));

      // Past the entry's life without the push, shop 1 goes to the app too.
      await sleep(Math.max(0, filledAt + UNPUSHED_TTL_MS + 100 - performance.now()));
      const ended = await atEdge('/api/shop/1');
      expectAppUnavailable(ended);
      expect(await levelsOf(filled, fromL1, fromApp, miss, ended)).toEqual(['L2', 'L1', '-', '-', '-']);
      expect(edgeProxy.connectionsRefused).toBeGreaterThan(0); // the edge did try Redis again, and was refused
    } finally {
      appProxy.restore();
      edgeProxy.restore();
    }
    expectNoneSlow();
    // Each cause once, though several requests (and the push) met it.
    const logged = await redisFailures();
    console.log(`edge faults: logged with Redis reset: ${JSON.stringify([...logged, ...(await warnings('the push of changes stopped'))])}`);
    expect(logged.length).toBeGreaterThan(0);
    expect(new Set(logged).size).toBe(logged.length);
    const pushLost = await warnings('the push of changes stopped');
    expect(new Set(pushLost).size).toBe(pushLost.length);

    // Redis reachable again: the push comes back, the app rebuilds shop 2, the edge answers it from Redis.
    await recovered();
    await eventually(async () => expect((await get(appUrl, '/api/shop/2')).status).toBe(200));
    const again = await atEdge('/api/shop/2');
    expect(again.status).toBe(200);
    expect(await levelsOf(again)).toEqual(['L2']);
  });
});

describe('the edge with its Redis stalled half-open (connections accepted, nothing forwarded)', () => {
  it('answers from L1, passes a miss to the app after its timeout, and logs the timeout once', async () => {
    const shop4 = await cachedByApp(4);
    const filled = await atEdge('/api/shop/4');
    expect(filled.status).toBe(200);
    appProxy.addToxic('stall', { type: 'stall' });
    edgeProxy.addToxic('stall', { type: 'stall' });
    try {
      const fromL1 = await atEdge('/api/shop/4');
      expect({ status: fromL1.status, body: fromL1.body }).toEqual({ status: 200, body: shop4.body });
      const miss = await atEdge('/api/shop/5');
      expectAppUnavailable(miss);
      console.log(`edge faults: with Redis stalled, an L1 hit in ${fromL1.ms.toFixed(1)} ms, a miss answered by the app in ${miss.ms.toFixed(0)} ms`);
      // A new connection stalls as the pooled one did: past the back-off, still bounded.
      await sleep(BACKOFF_MS + 200);
      expectAppUnavailable(await atEdge('/api/shop/6'));
      expect(await levelsOf(fromL1, miss)).toEqual(['L1', '-']);
    } finally {
      appProxy.removeToxic('stall');
      edgeProxy.removeToxic('stall');
    }
    expectNoneSlow();
    expect(await warnings('failed (timeout)')).toHaveLength(1);
    await recovered();
  });
});

describe("the edge's Redis slower or faster than the edge's timeout", () => {
  it('reads Redis under its timeout, and gives the request to the app over it, which answers from its own Redis', async () => {
    const [shop7, shop8] = [await cachedByApp(7), await cachedByApp(8)];
    // A reply an eighth of the timeout late: still L2.
    edgeProxy.addToxic('latency', { type: 'latency', latencyMs: REDIS_TIMEOUT_MS / 8 }, 'downstream');
    const under = await atEdge('/api/shop/7');
    // Two and a half timeouts late: the edge gives up at its timeout, the app answers.
    edgeProxy.addToxic('latency', { type: 'latency', latencyMs: REDIS_TIMEOUT_MS * 2.5 }, 'downstream');
    const over = await atEdge('/api/shop/8');
    edgeProxy.removeToxic('latency');
    expect({ status: under.status, body: under.body }).toEqual({ status: 200, body: shop7.body });
    expect({ status: over.status, body: over.body }).toEqual({ status: 200, body: shop8.body });
    console.log(
      `edge faults: Redis ${REDIS_TIMEOUT_MS / 8} ms late: L2 in ${under.ms.toFixed(0)} ms; ${REDIS_TIMEOUT_MS * 2.5} ms late: the app's answer in ${over.ms.toFixed(0)} ms`,
    );
    expect(await levelsOf(under, over)).toEqual(['L2', '-']);
    expectNoneSlow();
    expect(await warnings('failed (timeout)')).toHaveLength(1); // the stall's line: once an hour
    await recovered();
  });
});

describe('a malformed or oversized record in Redis', () => {
  /** Reads the shop through the edge until the app has replaced the bad record, then once more: at the edge. */
  async function answeredHereAfterRebuild(id: number, expected: string): Promise<void> {
    await eventually(async () => {
      await atEdge(`/api/shop/${id}`);
      const record = await direct.get(`cache:shop:${id}`);
      expect(record !== null && record.length <= MAX_RECORD_BYTES && record.startsWith('{"data":{')).toBe(true);
    });
    const after = await atEdge(`/api/shop/${id}`);
    expect({ status: after.status, body: after.body }).toEqual({ status: 200, body: expected });
    expect(['L1', 'L2']).toContain((await levelsOf(after))[0]);
  }

  it('passes a malformed record to the app, logs it once, and answers it here once the app rebuilt it', async () => {
    const shop9 = await cachedByApp(9);
    const passed: Answer[] = [];
    for (let round = 0; round < 2; round++) {
      await direct.set('cache:shop:9', '{"data":{"id":"9"', 'EX', 600);
      passed.push(await atEdge('/api/shop/9'));
    }
    // The app reads such a record as a miss and rebuilds it from MySQL.
    for (const answer of passed) expect({ status: answer.status, body: answer.body }).toEqual({ status: 200, body: shop9.body });
    expect(await levelsOf(...passed)).toEqual(['-', '-']);
    expect(await warnings(`${env.keyPrefix}cache:shop:9 is malformed`)).toHaveLength(1);
    await answeredHereAfterRebuild(9, shop9.body);
  });

  it('passes an oversized record to the app, logs it once, and answers it here once the app rebuilt it', async () => {
    const shop10 = await cachedByApp(10);
    const view = (JSON.parse(shop10.body) as { data: Record<string, unknown> }).data;
    // Valid to the app, which answers it until it ends (its TTL here: 1.5 s) and then rebuilds it.
    await direct.set('cache:shop:10', encodeValue({ ...view, images: 'x'.repeat(MAX_RECORD_BYTES) }), 'PX', 1_500);
    const passed = [await atEdge('/api/shop/10'), await atEdge('/api/shop/10')];
    for (const answer of passed) {
      expect(answer.status).toBe(200);
      expect((JSON.parse(answer.body) as { data: { images: string } }).data.images).toHaveLength(MAX_RECORD_BYTES);
    }
    expect(await levelsOf(...passed)).toEqual(['-', '-']);
    expect(await warnings(`${env.keyPrefix}cache:shop:10 is malformed (larger than ${MAX_RECORD_BYTES} bytes)`)).toHaveLength(1);
    await answeredHereAfterRebuild(10, shop10.body);
  });
});

describe("the app's pool down", () => {
  it('still answers L1 and L2 hits; a miss gets a 503 with Retry-After in the JSON of the API', async () => {
    const inL1 = await cachedByApp(11);
    expect((await atEdge('/api/shop/11')).status).toBe(200);
    const inL2 = await cachedByApp(12);
    await app.close();
    const [l1, l2, miss] = [await atEdge('/api/shop/11'), await atEdge('/api/shop/12'), await atEdge('/api/shop/13')];
    expect({ status: l1.status, body: l1.body }).toEqual({ status: 200, body: inL1.body });
    expect({ status: l2.status, body: l2.body }).toEqual({ status: 200, body: inL2.body });
    // No instance answered: the edge's own 503, never nginx's HTML page.
    expect(miss.status).toBe(503);
    expect(miss.headers.get('retry-after')).toBe('1');
    expect(JSON.parse(miss.body)).toEqual({ success: false, errorMsg: render(HTTP_MESSAGES.appUnreachable({ seconds: 1 }), 'zh') });
    expect(await levelsOf(l1, l2, miss)).toEqual(['L1', 'L2', '-']);
    expectNoneSlow();
  });
});
