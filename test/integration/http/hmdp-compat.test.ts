import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoPicture } from '../../../src/infra/seed/demo-images.js';
import { loadDemoData } from '../../../src/infra/seed/load-demo-data.js';
import { multipartFile } from '../../support/multipart.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../support/test-env.js';

/**
 * HMDP_COMPAT=true: what the course's front end behind its nginx (`rewrite /api(/.*) $1 break`)
 * sends, and how hmdp answered it. Without the flag, nothing of it exists.
 */
let env: TestEnv;
let compat: FastifyInstance;
let plain: FastifyInstance;
let user: { id: string; token: string };
const AXIOS_ACCEPT = 'application/json, text/plain, */*';

beforeAll(async () => {
  env = await createTestEnv({ HMDP_COMPAT: 'true' });
  await loadDemoData(env.db);
  [user] = (await createUsersWithSessions(env, 1, 15_700_000_000)) as [{ id: string; token: string }];
  ({ app: compat } = await buildTestApp(env));
  ({ app: plain } = await buildTestApp({ ...env, config: { ...env.config, hmdpCompat: false } }));
});

afterAll(async () => {
  await compat?.close();
  await plain?.close();
  await env?.cleanup();
});

const json = (response: { json: () => unknown }) => response.json() as { success: boolean; errorMsg?: string; data?: unknown };

describe('HMDP_COMPAT', () => {
  it('serves the API without the /api prefix', async () => {
    const shop = await compat.inject({ url: '/shop/1', headers: { accept: AXIOS_ACCEPT } });
    expect(shop.statusCode).toBe(200);
    expect(json(shop)).toMatchObject({ success: true, data: { id: '1' } });
    const types = await compat.inject({ url: '/shop-type/list', headers: { accept: AXIOS_ACCEPT } });
    expect(json(types).data).toHaveLength(10);
    expect(json(await compat.inject({ method: 'POST', url: '/user/code?phone=13812345678' }))).toMatchObject({ success: true });
  });

  it('answers refusals on that surface as hmdp does: 200, success false, the errorMsg; 401 stays 401', async () => {
    const badPhone = await compat.inject({ method: 'POST', url: '/user/code?phone=123' });
    expect(badPhone.statusCode).toBe(200);
    expect(json(badPhone)).toMatchObject({ success: false, errorMsg: expect.any(String) });
    expect(badPhone.headers['x-hmdp-status']).toBe('400');
    const unknownShop = await compat.inject({ url: '/shop/987654', headers: { accept: AXIOS_ACCEPT } });
    expect(unknownShop.statusCode).toBe(200);
    expect(json(unknownShop)).toMatchObject({ success: false });
    const self = await compat.inject({ method: 'PUT', url: `/follow/${user.id}/true`, headers: { authorization: user.token } });
    expect(self.statusCode).toBe(200);
    expect(json(self)).toMatchObject({ success: false });
    expect((await compat.inject({ url: '/user/me', headers: { accept: AXIOS_ACCEPT } })).statusCode).toBe(401);
  });

  it('leaves /api as it is, and a browser navigating to a page URL gets the web app', async () => {
    expect((await compat.inject({ url: '/api/shop/987654' })).statusCode).toBe(404);
    expect((await compat.inject({ method: 'POST', url: '/api/user/code?phone=123' })).statusCode).toBe(400);
    const page = await compat.inject({ url: '/shop/1', headers: { accept: 'text/html,application/xhtml+xml' } });
    expect(page.headers['content-type']).not.toContain('application/json');
  });

  it("accepts the blog editor's delete name with the /imgs prefix", async () => {
    const { payload, headers } = multipartFile(demoPicture({ hue: 0, variant: 0, width: 8, height: 8 }));
    const uploaded = await compat.inject({ method: 'POST', url: '/upload/blog', payload, headers: { ...headers, authorization: user.token } });
    const name = json(uploaded).data as string;
    expect(name).toMatch(/^\/blogs\//);
    const removed = await compat.inject({ url: `/upload/blog/delete?name=${encodeURIComponent(`/imgs${name}`)}`, headers: { authorization: user.token } });
    expect(json(removed)).toMatchObject({ success: true });
    expect(await env.db.selectFrom('tb_upload').select('name').where('name', '=', name).executeTakeFirst()).toBeUndefined();
  });

  it('does not exist without the flag', async () => {
    expect((await plain.inject({ method: 'POST', url: '/user/code?phone=13812345679' })).statusCode).toBe(404);
    const shop = await plain.inject({ url: '/shop/1', headers: { accept: AXIOS_ACCEPT } });
    expect(shop.headers['content-type'] ?? '').not.toContain('application/json');
  });
});
