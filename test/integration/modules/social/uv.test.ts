import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDemoData } from '../../../../src/infra/seed/load-demo-data.js';
import { UvService } from '../../../../src/modules/social/uv-service.js';
import { shopUvKey, siteUvKey } from '../../../../src/modules/social/keys.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, sessionOf, type TestEnv } from '../../../support/test-env.js';
import { eventually } from '../../../support/eventually.js';
import { auth, client } from './support.js';

let env: TestEnv;
let app: FastifyInstance;
let http: ReturnType<typeof client>;
let users: Array<{ id: string; token: string }>;
let admin: { id: string; token: string };
const clock = Date.UTC(2026, 8, 9, 4, 0, 0); // 2026-09-09 in Shanghai

beforeAll(async () => {
  env = await createTestEnv({ UV_FLUSH_MS: '50' });
  await loadDemoData(env.db);
  users = await createUsersWithSessions(env, 4, 15_600_000_000);
  admin = { id: '1', token: (await sessionOf(env, '1', 'admin')).authorization };
  ({ app } = await buildTestApp(env, undefined, { now: () => clock }));
  http = client(app);
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

describe('unique visitors', () => {
  it('1,000,000 distinct visitors: PFCOUNT within 2 % and the key under 15 KB', async () => {
    const key = siteUvKey('20260101');
    const batch = 10_000;
    const total = 1_000_000;
    const commands: Array<Promise<unknown>> = [];
    for (let start = 0; start < total; start += batch) {
      const members = Array.from({ length: batch }, (_, i) => `visitor-${start + i}`);
      commands.push(env.redis.pfadd(key, ...members)); // auto-pipelined: 100 commands of 10k
    }
    await Promise.all(commands);
    const response = await http.get('/api/stats/uv?date=2026-01-01', auth(admin));
    expect(response.statusCode, response.body).toBe(200);
    const { uv, date } = response.json().data as { uv: number; date: string };
    expect(date).toBe('2026-01-01');
    expect(Math.abs(uv - total) / total).toBeLessThan(0.02);
    const bytes = (await env.redis.call('MEMORY', 'USAGE', `${env.keyPrefix}${key}`)) as number;
    expect(bytes).toBeLessThan(15 * 1024);
  });

  it('records GETs under /api as site visits and GET /api/shop/{id} as shop visits, one per visitor', async () => {
    const [a, b, c] = users;
    for (const user of [a!, b!, c!, a!, a!]) await http.get('/api/shop/1', auth(user));
    await http.get('/api/shop/2', auth(a!));
    await http.get('/api/shop/1'); // anonymous: counted by IP
    await http.get('/api/shop/999999', auth(b!)); // 404: not a visit of any shop
    await eventually(async () => expect(await env.redis.pfcount(shopUvKey('1', '20260909'))).toBe(4));
    expect(await env.redis.pfcount(shopUvKey('2', '20260909'))).toBe(1);
    expect(await env.redis.exists(shopUvKey('999999', '20260909'))).toBe(0);
    expect(await env.redis.ttl(shopUvKey('1', '20260909'))).toBeGreaterThan(300 * 86_400);
    const shop = (await http.get('/api/stats/uv?date=2026-09-09&shopId=1', auth(admin))).json().data;
    expect(shop).toEqual({ date: '2026-09-09', shopId: '1', uv: 4 });
    // Site: a, b, c, the anonymous IP (+ the admin's own GETs of /stats/uv, recorded after answering).
    const site = (await http.get('/api/stats/uv', auth(admin))).json().data as { date: string; uv: number };
    expect(site.date).toBe('2026-09-09');
    expect(site.uv).toBeGreaterThanOrEqual(4);
    expect(site.uv).toBeLessThanOrEqual(5);
  });

  it('buffers visits in process and writes each key once per flush: nothing before it, every visitor after', async () => {
    const service = new UvService(env.redis, () => clock, { flushMs: 60_000 });
    for (let i = 0; i < 500; i++) await service.record(`buffered-${i % 100}`, '7');
    expect(await env.redis.exists(shopUvKey('7', '20260909'))).toBe(0);
    await service.flush();
    expect(await env.redis.pfcount(shopUvKey('7', '20260909'))).toBe(100);
    expect(await env.redis.ttl(shopUvKey('7', '20260909'))).toBeGreaterThan(300 * 86_400);
  });

  it('flushes before the interval once maxBuffered visitors are waiting', async () => {
    const service = new UvService(env.redis, () => clock, { flushMs: 60_000, maxBuffered: 10 });
    for (let i = 0; i < 10; i++) await service.record(`early-${i}`, '8');
    await eventually(async () => expect(await env.redis.pfcount(shopUvKey('8', '20260909'))).toBe(10));
  });

  it('GET /api/stats/uv: administrators only; bad dates and ids → 400 naming the field', async () => {
    expect((await http.get('/api/stats/uv')).statusCode).toBe(401);
    expect((await http.get('/api/stats/uv', auth(users[0]!))).statusCode).toBe(403);
    const badDate = await http.get('/api/stats/uv?date=2026-02-30', auth(admin));
    expect(badDate.statusCode).toBe(400);
    expect(badDate.json().errorMsg).toContain('querystring.date');
    const badShop = await http.get('/api/stats/uv?shopId=x', auth(admin));
    expect(badShop.statusCode).toBe(400);
    expect(badShop.json().errorMsg).toContain('querystring.shopId');
  });
});
