import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDemoData } from '../../../src/infra/seed/load-demo-data.js';
import { encodeValue } from '../../../src/lib/cache/codec.js';
import { startEdge, type Edge } from '../../../kit/edge.js';
import { comparable, UUID_V4, type Answer } from '../../support/edge-answers.js';
import { eventually } from '../../support/eventually.js';
import { buildTestApp, createTestEnv, metricsAuth, sessionOf, type TestEnv } from '../../support/test-env.js';

/**
 * The edge (edge/nginx.conf.template + edge/lua) in front of a real app instance, on the shared
 * Redis and MariaDB: every read it answers, at L1 or L2, is the app's own answer byte for byte
 * (status, body, the headers that matter, x-request-id's rule, language by Accept-Language, the
 * compat surface), and whatever it cannot answer exactly goes to the app. The app runs with
 * HMDP_COMPAT, so one instance answers both surfaces; L1 entries live a minute here, so that an
 * answer from L1 is told from one from Redis by a record changed behind the edge's back.
 */
let env: TestEnv;
let app: FastifyInstance;
let appUrl: string;
let edge: Edge;

const MAX_RECORD_BYTES = 4096;

beforeAll(async () => {
  env = await createTestEnv({ HMDP_COMPAT: 'true', DEFAULT_LANGUAGE: 'zh', UV_FLUSH_MS: '100' });
  await loadDemoData(env.db);
  ({ app } = await buildTestApp(env));
  appUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  const address = appUrl.replace('http://', '');
  // L1 trusted a minute with or without the push: only the push explains a change seen sooner.
  edge = await startEdge(env.config, {
    salePool: [address],
    reads: { l1TtlMs: 60_000, l1UnpushedTtlMs: 60_000, l1JitterPercent: 0, maxRecordBytes: MAX_RECORD_BYTES },
  });
  await eventually(async () => expect((await status()).push).toBe('up'));
}, 60_000);

afterAll(async () => {
  await edge?.stop();
  await app?.close();
  await env?.cleanup();
});

async function get(base: string, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Answer> {
  const response = await fetch(`${base}${path}`, { method, headers });
  return { status: response.status, body: await response.text(), headers: Object.fromEntries(response.headers) };
}

/** Requests the app answered, by its own metrics (http_request_duration_seconds; its scrapes left out). */
async function appRequests(): Promise<number> {
  const text = (await app.inject({ url: '/metrics', headers: metricsAuth })).body;
  return text
    .split('\n')
    .filter((line) => line.startsWith('http_request_duration_seconds_count{') && !line.includes('route="/metrics"'))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

/** The edge's answer, the app's own answer to the same request, and whether the app saw the edge's. */
async function both(path: string, headers: Record<string, string> = {}, method = 'GET') {
  const before = await appRequests();
  const atEdge = await get(edge.url, path, headers, method);
  const reachedApp = (await appRequests()) !== before;
  const atApp = await get(appUrl, path, headers, method);
  return { atEdge, atApp, reachedApp };
}

const shopKey = (id: string) => `cache:shop:${id}`;

/** The edge's own state (GET /_edge/status). */
async function status(): Promise<{ push: string; generation: number }> {
  return (await fetch(`${edge.url}/_edge/status`)).json() as Promise<{ push: string; generation: number }>;
}

/**
 * The app's read of a shop Redis does not hold, and the announcement of its rebuild applied at the
 * edge (the generation counted up): from then on no announcement of that rebuild can drop what the
 * edge keeps.
 */
async function warm(id: string): Promise<void> {
  await env.redis.del(shopKey(id));
  const before = (await status()).generation;
  expect((await get(appUrl, `/api/shop/${id}`)).status).toBe(200);
  await expect.poll(async () => (await status()).generation).toBeGreaterThan(before);
}

describe('the edge: reads answered as the app answers them', () => {
  it("answers a cached shop from Redis (L2), then from L1, with the app's status, body and headers", async () => {
    await warm('1');
    const l2 = await both('/api/shop/1');
    expect(l2.reachedApp).toBe(false);
    expect(comparable(l2.atEdge)).toEqual(comparable(l2.atApp));
    expect(l2.atEdge.status).toBe(200);
    expect(JSON.parse(l2.atEdge.body)).toMatchObject({ success: true, data: { id: '1' } });
    expect(l2.atEdge.headers['x-request-id']).toMatch(UUID_V4);

    // The record changes behind the edge's back: L1 still answers what it built (for its TTL).
    const record = (await env.redis.get(shopKey('1')))!;
    await env.redis.set(shopKey('1'), record.replace('"name":"', '"name":"changed '));
    const l1 = await both('/api/shop/1');
    expect(l1.reachedApp).toBe(false);
    expect(l1.atEdge.body).toBe(l2.atEdge.body);
    expect(JSON.parse(l1.atApp.body).data.name).toMatch(/^changed /);
    // The compat surface answers the same shop the same way, from the same L1 entry.
    const compat = await both('/shop/1');
    expect(compat.atEdge.body).toBe(l2.atEdge.body);
    expect(compat.reachedApp).toBe(false);
  });

  it('passes a shop Redis does not hold to the app, which caches it; the next read is answered from Redis', async () => {
    await env.redis.del(shopKey('2'));
    const miss = await both('/api/shop/2');
    expect(miss.reachedApp).toBe(true);
    expect(comparable(miss.atEdge)).toEqual(comparable(miss.atApp));
    const hit = await both('/api/shop/2');
    expect(hit.reachedApp).toBe(false);
    expect(comparable(hit.atEdge)).toEqual(comparable(hit.atApp));
  });

  it("answers a null marker with the app's 404 in the language the client asks for, on both surfaces", async () => {
    await env.redis.set(shopKey('9000'), '', 'EX', 600);
    // The plain forms browsers send are decided at the edge; for the others the app answers.
    const plain = [undefined, 'en', 'en-US,en;q=0.9', 'zh-CN,zh;q=0.9,en;q=0.8', 'EN-gb', 'fr', '*', 'en;q=0', 'de, en;q=0.5'];
    const alike = ['zh;q=0.5,en;q=0.5', 'en;q=0.5,zh;q=0.5', '*;q=0.5,en;q=0.4', 'en;q=0.8,zh-TW;q=0.9', 'en;q=0,zh;q=0'];
    const others = ['en;q=abc', 'en_US', 'en-US;level=1,zh', '', 'en;q=1.5'];
    for (const acceptLanguage of [...plain, ...alike, ...others]) {
      const asked: Record<string, string> = acceptLanguage === undefined ? {} : { 'accept-language': acceptLanguage };
      const atEdge = !others.includes(acceptLanguage!);
      for (const path of ['/api/shop/9000', '/shop/9000']) {
        const { atEdge: edgeAnswer, atApp, reachedApp } = await both(path, asked);
        expect({ acceptLanguage, path, reachedApp, ...comparable(edgeAnswer) }).toEqual({ acceptLanguage, path, reachedApp: !atEdge, ...comparable(atApp) });
        if (path.startsWith('/api')) expect(edgeAnswer.status).toBe(404);
        else expect(edgeAnswer.headers['x-hmdp-status']).toBe('404');
      }
    }
  });

  it('passes a malformed, oversized, logically expired or other-shaped record to the app, logging a malformed one once', async () => {
    const view = JSON.parse((await get(appUrl, '/api/shop/3')).body).data as Record<string, unknown>;
    const records = {
      garbage: '{"data":{"id":"3"',
      notOurs: '{"value":1}',
      twoDatas: '{"data":1,"data":{"id":"3"}}',
      oversized: encodeValue({ ...view, images: 'x'.repeat(MAX_RECORD_BYTES) }),
      expired: encodeValue(view, Date.now() - 1_000),
      nullData: '{"data":null}',
      array: '{"data":[1,2]}',
    };
    for (const [kind, record] of Object.entries(records)) {
      await env.redis.set(shopKey('3'), record, 'EX', 600);
      const { atEdge, atApp, reachedApp } = await both('/api/shop/3');
      expect({ kind, reachedApp }).toEqual({ kind, reachedApp: true });
      // The app answered what it answers for that record (and may have rebuilt it meanwhile).
      expect(atEdge.status).not.toBe(500);
      expect({ kind, ...comparable(atEdge) }).toEqual({ kind, ...comparable(atApp) });
    }
    await env.redis.set(shopKey('3'), records.garbage, 'EX', 600);
    await get(edge.url, '/api/shop/3');
    const warnings = (await edge.errorLog()).split('\n').filter((line) => line.includes(`${env.keyPrefix}${shopKey('3')} `));
    // One per key and hour: the first malformed record, not the ones after.
    expect(warnings).toHaveLength(1);
  });

  it('keeps a sane x-request-id of the caller and replaces any other, as the app does', async () => {
    const kept = await both('/api/shop/1', { 'x-request-id': 'trace-42.a:b_c' });
    expect(kept.atEdge.headers['x-request-id']).toBe('trace-42.a:b_c');
    expect(kept.atApp.headers['x-request-id']).toBe('trace-42.a:b_c');
    for (const refused of ['has space', 'x'.repeat(65), 'bad/slash', 'semi;colon']) {
      const replaced = await both('/api/shop/1', { 'x-request-id': refused });
      expect(replaced.atEdge.headers['x-request-id']).toMatch(UUID_V4);
      expect(replaced.atApp.headers['x-request-id']).toMatch(UUID_V4);
    }
  });

  it('answers the shop types from Redis on both surfaces', async () => {
    await get(appUrl, '/api/shop-type/list');
    for (const path of ['/api/shop-type/list', '/shop-type/list']) {
      const { atEdge, atApp, reachedApp } = await both(path);
      expect(reachedApp).toBe(false);
      expect(comparable(atEdge)).toEqual(comparable(atApp));
      expect(JSON.parse(atEdge.body).data.length).toBeGreaterThan(0);
    }
  });

  it('leaves to the app what depends on the caller or is not a plain GET of the route', async () => {
    await get(edge.url, '/api/shop/1');
    const cases: Array<[string, Record<string, string>, string]> = [
      ['/api/shop/1', { authorization: 'x'.repeat(20) }, 'GET'], // a session to touch
      ['/api/shop/1?x=1', {}, 'GET'],
      ['/api/shop/1', {}, 'HEAD'],
      ['/api/shop/01', {}, 'GET'], // the app's 400
      ['/api/shop/12345678901234567890', {}, 'GET'],
      ['/shop/1', { accept: 'text/html' }, 'GET'], // a page load on the compat surface
    ];
    for (const [path, headers, method] of cases) {
      const { atEdge, atApp, reachedApp } = await both(path, headers, method);
      expect({ path, method, reachedApp, status: atEdge.status, body: atEdge.body }).toEqual({
        path,
        method,
        reachedApp: true,
        status: atApp.status,
        body: atApp.body,
      });
    }
  });

  it('drops an L1 entry when the app announces a change of its record (PUT /api/shop): the next read is the new shop', async () => {
    await warm('6');
    const before = await get(edge.url, '/api/shop/6');
    expect(JSON.parse(before.body).data.id).toBe('6');
    const admin = await sessionOf(env, '1', 'admin');
    const put = await fetch(`${appUrl}/api/shop`, {
      method: 'PUT',
      headers: { ...admin, 'content-type': 'application/json' },
      body: JSON.stringify({ id: '6', name: 'renamed through the app' }),
    });
    expect(put.status).toBe(200);
    const answered = performance.now();
    // L1 would keep the old shop a minute: only the announcement makes the edge read again.
    await expect.poll(async () => JSON.parse((await get(edge.url, '/api/shop/6')).body).data.name, { interval: 5 }).toBe('renamed through the app');
    console.log(`edge: a PUT /api/shop seen at the edge ${(performance.now() - answered).toFixed(1)} ms after the app's answer`);
    const { atEdge, atApp } = await both('/api/shop/6');
    expect(comparable(atEdge)).toEqual(comparable(atApp));
  });

  it('empties L1 when its subscription comes back after a loss (announcements may have been missed)', async () => {
    await warm('7');
    const kept = await get(edge.url, '/api/shop/7');
    // A change no announcement tells of, while the push is up: L1 keeps the old shop.
    const record = (await env.redis.get(shopKey('7')))!;
    await env.redis.set(shopKey('7'), record.replace('"name":"', '"name":"unannounced '));
    expect((await get(edge.url, '/api/shop/7')).body).toBe(kept.body);
    // The subscriber's connection is cut: it subscribes again and starts from an empty L1.
    const ids = await clientIds(`hmdp-edge-push:${env.keyPrefix}`);
    expect(ids).toHaveLength(1);
    expect(await env.redis.call('CLIENT', 'KILL', 'ID', ids[0]!)).toBe(1);
    await expect.poll(async () => JSON.parse((await get(edge.url, '/api/shop/7')).body).data.name as string).toMatch(/^unannounced /);
    await expect.poll(async () => (await status()).push).toBe('up');
  });

  it("counts the visits it answers in the app's unique-visitor counts (UV_TRACKING)", async () => {
    const day = shanghaiDay();
    await get(appUrl, '/api/shop/4'); // cached, and a visit of 127.0.0.1 counted by the app
    const visitor = await fetchFrom('127.0.0.2', `/api/shop/4`);
    expect(visitor).toBe(200);
    // The edge's visitor, 127.0.0.2, joins the app's: two distinct visitors of the shop that day.
    await expect.poll(() => env.redis.pfcount(`uv:shop:4:${day}`)).toBe(2);
  });
});

/** The ids of the Redis connections with this name (CLIENT LIST). */
async function clientIds(name: string): Promise<string[]> {
  const list = (await env.redis.call('CLIENT', 'LIST', 'TYPE', 'pubsub')) as string;
  return list
    .split('\n')
    .filter((line) => line.includes(` name=${name} `))
    .map((line) => /^id=(\d+)/.exec(line)![1]!);
}

/** Today in Asia/Shanghai as the app stamps its UV keys (yyyyMMdd). */
function shanghaiDay(): string {
  return new Date(Date.now() + 8 * 3600_000).toISOString().slice(0, 10).replaceAll('-', '');
}

/** A GET to the edge from another loopback address (the edge's visitor is the client's address). */
async function fetchFrom(localAddress: string, path: string): Promise<number> {
  const { request } = await import('node:http');
  return new Promise((resolve, reject) => {
    const outgoing = request({ host: '127.0.0.1', port: edge.port, path, localAddress, agent: false }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}
