import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/app.js';
import { closeRedis, createRedis } from '../../../src/infra/redis.js';
import { ok, stringifyResult } from '../../../src/http/result.js';
import { ResultOf } from '../../../src/http/schemas.js';
import { buildTestApp, createTestEnv, type TestEnv } from '../../support/test-env.js';

let env: TestEnv;
let app: FastifyInstance;
const logged: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  env = await createTestEnv();
  // A built web front end of this file's own: its catch-all GET route is part of the routing.
  const webRoot = join(tmpdir(), env.name, 'web');
  await mkdir(webRoot, { recursive: true });
  await writeFile(join(webRoot, 'index.html'), '<!doctype html><title>spa</title>');
  // A real app with a capturing logger, plus one route that fails the way a bug would.
  app = await buildApp({
    config: env.config,
    redis: env.redis,
    db: env.db,
    webRoot,
    logger: { level: 'error', stream: { write: (line: string) => logged.push(JSON.parse(line)) } },
  });
  app.get('/api/boom', { config: { public: true } }, async () => {
    throw new Error('secret connection string mysql://root:hunter2@db');
  });
  app.get('/api/big', { config: { public: true } }, async () => ok({ id: 2n ** 63n - 1n, ids: [1n] }));
  // A response schema that declares less than the handler returns, and a string where it returns a bigint.
  app.get('/api/declared', { config: { public: true }, schema: { response: { 200: ResultOf(Type.Object({ id: Type.String() })) } } }, async () =>
    ok({ id: 7n, undeclared: true }),
  );
  await app.ready();
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

describe('HTTP conventions', () => {
  it('GET /api/health reports Redis and MySQL up', async () => {
    const response = await app.inject({ url: '/api/health' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ success: true, data: { status: 'up', redis: 'up', mysql: 'up' } });
  });

  it('answers 503 when Redis is unreachable: health names it, other requests may retry', async () => {
    const deadRedis = createRedis({ redisUrl: 'redis://127.0.0.1:1/0', redisClusterNodes: [], redisKeyPrefix: '' });
    deadRedis.on('error', () => {});
    const { app: broken } = await buildTestApp({ ...env, redis: deadRedis });
    try {
      const response = await broken.inject({ url: '/api/health' });
      expect(response.statusCode).toBe(503);
      expect(response.json()).toMatchObject({ success: false, data: { redis: 'down', mysql: 'up' } });
      // A request that needs Redis gets 503 and a hint to retry, not a 500.
      const code = await broken.inject({ method: 'POST', url: '/api/user/code?phone=13812345678' });
      expect(code.statusCode).toBe(503);
      expect(code.headers['retry-after']).toBe('1');
      expect(code.json().errorMsg).toMatch(/^Redis is unreachable, please retry/);
    } finally {
      await broken.close();
      await closeRedis(deadRedis);
    }
  });

  it('answers an unknown error with 500 and a request id, logs it, and leaks nothing', async () => {
    const response = await app.inject({ url: '/api/boom', headers: { 'x-request-id': 'req-123' } });
    expect(response.statusCode).toBe(500);
    expect(response.body).not.toContain('hunter2');
    expect(response.json()).toEqual({ success: false, errorMsg: 'Internal server error (request id req-123)' });
    expect(response.headers['x-request-id']).toBe('req-123');
    const entry = logged.find((line) => line.reqId === 'req-123');
    expect(entry).toMatchObject({ msg: 'unhandled error', err: { message: expect.stringContaining('hunter2') } });
  });

  it('makes up a request id when the caller sends none (or a bad one)', async () => {
    const response = await app.inject({ url: '/api/health', headers: { 'x-request-id': 'bad id with spaces' } });
    expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers unknown routes with 404 in the response wrapper', async () => {
    const response = await app.inject({ url: '/api/no/such/thing?x=1' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ success: false, errorMsg: 'No route for GET /api/no/such/thing' });
  });

  it('refuses infinite numbers in a query with 400 (Ajv coerces 1e309 to Infinity and would skip the bounds)', async () => {
    for (const url of ['/api/blog/hot?current=1e309', '/api/shop/of/name?current=-1e309', '/api/shop/of/type?typeId=1&x=Infinity&y=30']) {
      const response = await app.inject({ url });
      expect(response.statusCode, url).toBe(400);
      expect(response.json().errorMsg, url).toMatch(/^querystring\.(current|x) must be/);
    }
  });

  it('answers a malformed or over-long URL in the wrapper, without echoing it', async () => {
    const malformed = await app.inject({ url: '/api/shop/%E0%A4%A' });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json()).toEqual({ success: false, errorMsg: 'The URL is malformed (bad percent-encoding)' });
    // A GET as well as a POST: the web front end's catch-all GET route does not take /api paths.
    for (const [method, url] of [
      ['POST', `/api/voucher-order/seckill/${'9'.repeat(5000)}`],
      ['GET', `/api/shop/${'9'.repeat(101)}`],
      ['GET', `/api/follow/or/not/${'9'.repeat(101)}`],
    ] as const) {
      const long = await app.inject({ method, url });
      expect(long.statusCode, url).toBe(414);
      expect(long.json(), url).toEqual({ success: false, errorMsg: 'A path parameter is too long' });
    }
    // 100 characters is within the limit: the route answers (this id is too large for a shop).
    const longest = await app.inject({ url: `/api/shop/${'9'.repeat(100)}` });
    expect(longest.statusCode).toBe(400);
    // Outside /api, the web front end's history URLs, however long, are its page.
    expect((await app.inject({ url: `/shops/${'9'.repeat(101)}` })).body).toContain('<title>spa</title>');
  });

  it('speaks JSON only: a text/plain body is 415, not parsed and ignored', async () => {
    const response = await app.inject({ method: 'POST', url: '/api/user/login', headers: { 'content-type': 'text/plain' }, payload: 'phone=1' });
    expect(response.statusCode).toBe(415);
    expect(response.json()).toEqual({ success: false, errorMsg: expect.stringMatching(/Unsupported Media Type/i) });
  });

  it('sends 64-bit ids as decimal strings', async () => {
    const response = await app.inject({ url: '/api/big' });
    expect(response.body).toBe('{"success":true,"data":{"id":"9223372036854775807","ids":["1"]}}');
    expect(stringifyResult(ok(5n, 1))).toBe('{"success":true,"data":"5","total":1}');
  });

  it('writes an answer as its handler returned it: a response schema documents it, never filters or converts it', async () => {
    const response = await app.inject({ url: '/api/declared' });
    expect(response.statusCode).toBe(200);
    expect(response.body).toBe('{"success":true,"data":{"id":"7","undeclared":true}}');
  });
});
