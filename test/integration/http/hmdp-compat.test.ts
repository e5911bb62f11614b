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
let other: { id: string; token: string };
const AXIOS_ACCEPT = 'application/json, text/plain, */*';

beforeAll(async () => {
  env = await createTestEnv({ HMDP_COMPAT: 'true' });
  await loadDemoData(env.db);
  [user, other] = (await createUsersWithSessions(env, 2, 15_700_000_000)) as [{ id: string; token: string }, { id: string; token: string }];
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

  describe('publishing from the blog editor, which names each picture by its /imgs URL', () => {
    /** An image uploaded by `as` on the course's surface: the name /upload/blog hands out. */
    const upload = async (as: { token: string }, hue: number): Promise<string> => {
      const { payload, headers } = multipartFile(demoPicture({ hue, variant: 1, width: 8, height: 8 }));
      const uploaded = await compat.inject({ method: 'POST', url: '/upload/blog', payload, headers: { ...headers, authorization: as.token } });
      return json(uploaded).data as string;
    };
    const publish = (app: FastifyInstance, url: string, images: string) =>
      app.inject({
        method: 'POST',
        url,
        headers: { authorization: user.token },
        payload: { shopId: '1', title: 'editor', content: 'from blog-edit.html', images },
      });
    const attachedTo = async (name: string) =>
      (await env.db.selectFrom('tb_upload').select('blog_id').where('name', '=', name).executeTakeFirstOrThrow()).blog_id;

    it('accepts the /imgs form of my own uploads and stores it as hmdp does, shown at that URL', async () => {
      const [first, second] = [await upload(user, 40), await upload(user, 80)];
      const sent = `/imgs${first},/imgs${second}`;
      const published = await publish(compat, '/blog', sent);
      expect(json(published)).toMatchObject({ success: true, data: expect.any(String) });
      const id = json(published).data as string;
      const row = await env.db.selectFrom('tb_blog').select('images').where('id', '=', id).executeTakeFirstOrThrow();
      expect(row.images).toBe(sent);
      expect([await attachedTo(first), await attachedTo(second)]).toEqual([id, id]);
      const shown = await compat.inject({ url: `/blog/${id}`, headers: { authorization: user.token, accept: AXIOS_ACCEPT } });
      expect(json(shown)).toMatchObject({ success: true, data: { images: sent } });
      const picture = await compat.inject({ url: `/imgs${first}` });
      expect([picture.statusCode, picture.headers['content-type']]).toEqual([200, 'image/png']);
    });

    it("refuses another user's upload, an image named twice, and leaves both uploads unattached", async () => {
      const [mine, theirs] = [await upload(user, 120), await upload(other, 160)];
      const stolen = await publish(compat, '/blog', `/imgs${mine},/imgs${theirs}`);
      expect(json(stolen)).toMatchObject({ success: false, errorMsg: expect.stringContaining('images you uploaded') });
      expect(stolen.headers['x-hmdp-status']).toBe('400');
      const twice = await publish(compat, '/blog', `/imgs${mine},${mine}`);
      expect(json(twice)).toMatchObject({ success: false, errorMsg: expect.stringContaining('twice') });
      expect([await attachedTo(mine), await attachedTo(theirs)]).toEqual([null, null]);
    });

    it('keeps the rule of /upload/blog names on /api and without the flag', async () => {
      const name = await upload(user, 200);
      for (const [app, url] of [
        [compat, '/api/blog'],
        [plain, '/api/blog'],
      ] as const) {
        const refused = await publish(app, url, `/imgs${name}`);
        expect(refused.statusCode).toBe(400);
        expect(json(refused).errorMsg).toContain('is not an image name from /upload/blog');
      }
      expect(await attachedTo(name)).toBeNull();
      const published = await publish(plain, '/api/blog', name);
      expect(published.statusCode).toBe(200);
      const row = await env.db
        .selectFrom('tb_blog')
        .select('images')
        .where('id', '=', json(published).data as string)
        .executeTakeFirstOrThrow();
      expect(row.images).toBe(name);
    });
  });

  it('does not exist without the flag', async () => {
    expect((await plain.inject({ method: 'POST', url: '/user/code?phone=13812345679' })).statusCode).toBe(404);
    const shop = await plain.inject({ url: '/shop/1', headers: { accept: AXIOS_ACCEPT } });
    expect(shop.headers['content-type'] ?? '').not.toContain('application/json');
  });
});
