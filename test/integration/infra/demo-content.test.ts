import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_BLOGS, DEMO_FOLLOWS, loadDemoContent } from '../../../src/cli/demo-content.js';
import { DEMO_SECKILL_STATES, SHOP_TYPES } from '../../../src/infra/seed/demo-data.js';
import { loadDemoData } from '../../../src/infra/seed/load-demo-data.js';
import { buy } from '../../support/seckill.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, sessionOf, type TestEnv } from '../../support/test-env.js';

/** What `npm run seed` gives a newcomer: the home page, shop pictures, pages of shops, vouchers in every state. */
let env: TestEnv;
let app: FastifyInstance;
const DEFAULT_POINT = { x: 120.149993, y: 30.334229 };

beforeAll(async () => {
  env = await createTestEnv();
  await loadDemoData(env.db);
  await loadDemoContent(env.db, env.redis, env.config.upload.dir);
  ({ app } = await buildTestApp(env));
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

interface BlogView {
  id: string;
  title: string;
  images: string;
  liked: number;
  name: string;
}

describe('demo content', () => {
  it('fills the home page with blogs that have pictures and likes, most liked first', async () => {
    const hot = (await app.inject({ url: '/api/blog/hot?current=1' })).json<{ data: BlogView[] }>().data;
    expect(hot.length).toBe(DEMO_BLOGS.length);
    expect(hot.every((blog) => blog.images.length > 0 && blog.name.length > 0)).toBe(true);
    expect(hot[0]?.liked).toBe(Math.max(...DEMO_BLOGS.map((blog) => blog.likers.length)));
    expect(hot.some((blog) => blog.liked > 0)).toBe(true);

    // Every picture is stored as the path it is served at (as the course stores them: its pages use
    // it as is), and is the author's upload attached to the blog (what POST /blog requires).
    for (const blog of hot) {
      for (const name of blog.images.split(',')) {
        expect(name).toMatch(/^\/imgs\/blogs\/\d+\/\d+\/[\w-]+\.png$/);
        const picture = await app.inject({ url: name });
        expect(picture.statusCode, name).toBe(200);
        expect(picture.headers['content-type']).toBe('image/png');
      }
    }
    const uploads = await env.db
      .selectFrom('tb_upload')
      .innerJoin('tb_blog', 'tb_blog.id', 'tb_upload.blog_id')
      .select(['tb_upload.user_id as owner', 'tb_blog.user_id as author'])
      .execute();
    expect(uploads.length).toBe(DEMO_BLOGS.reduce((sum, blog) => sum + blog.images, 0));
    expect(uploads.every((row) => row.owner === row.author)).toBe(true);

    // The likers are in Redis too (the list under a blog and "liked by me").
    const likers = (await app.inject({ url: '/api/blog/likes/1', headers: await sessionOf(env, '1') })).json<{ data: Array<{ id: string }> }>().data;
    expect(likers.map((user) => user.id).sort()).toEqual([...DEMO_BLOGS[0]!.likers].sort());
  });

  it('gives followers a feed of the blogs of whom they follow', async () => {
    const followees = DEMO_FOLLOWS.filter(([follower]) => follower === '1').map(([, followee]) => followee);
    const feed = (await app.inject({ url: `/api/blog/of/follow?lastId=${Date.now()}&offset=0`, headers: await sessionOf(env, '1') })).json<{
      data: { list: Array<{ id: string }> };
    }>().data;
    const expected = DEMO_BLOGS.filter((blog) => followees.includes(blog.user_id)).map((blog) => blog.id);
    expect(feed.list.map((blog) => blog.id).sort()).toEqual(expected.sort());
    const follows = (await app.inject({ url: '/api/follow/or/not/2', headers: await sessionOf(env, '1') })).json<{ data: boolean }>();
    expect(follows.data).toBe(true);
  });

  it('shows shop pictures and two pages of every type near the default point', async () => {
    const shop = (await app.inject({ url: '/api/shop/1' })).json<{ data: { images: string } }>().data;
    const [first] = shop.images.split(',');
    expect(first).toMatch(/^\/imgs\/shops\/.+\.png$/);
    expect((await app.inject({ url: first! })).statusCode).toBe(200);
    for (const type of SHOP_TYPES) {
      const page2 = await app.inject({ url: `/api/shop/of/type?typeId=${type.id}&current=2&x=${DEFAULT_POINT.x}&y=${DEFAULT_POINT.y}` });
      expect(page2.json<{ data: unknown[] }>().data.length, `type ${type.id}`).toBeGreaterThan(0);
    }
  });

  it('has a seckill voucher on sale, one upcoming, one sold out and one ended', async () => {
    const [buyer] = await createUsersWithSessions(env, 1, 15_600_000_000);
    const answer = async (voucherId: string) => (await buy(app, buyer!.token, voucherId)).json<{ success: boolean; errorMsg?: string }>();
    expect(await answer(DEMO_SECKILL_STATES.upcoming)).toMatchObject({ success: false, errorMsg: expect.stringMatching(/not started/i) });
    expect(await answer(DEMO_SECKILL_STATES.soldOut)).toMatchObject({ success: false, errorMsg: expect.stringMatching(/sold out/i) });
    expect(await answer(DEMO_SECKILL_STATES.ended)).toMatchObject({ success: false, errorMsg: expect.stringMatching(/ended/i) });
    expect(await answer(DEMO_SECKILL_STATES.open)).toMatchObject({ success: true });
    const rows = await env.db.selectFrom('tb_seckill_voucher').selectAll().execute();
    const now = Date.now();
    const byId = new Map(rows.map((row) => [row.voucher_id, row]));
    expect(byId.get(DEMO_SECKILL_STATES.upcoming)!.begin_time.getTime()).toBeGreaterThan(now);
    expect(byId.get(DEMO_SECKILL_STATES.soldOut)!.stock).toBe(0);
    expect(byId.get(DEMO_SECKILL_STATES.ended)!.end_time.getTime()).toBeLessThan(now);
  });

  it('loads nothing twice, and gives demo blogs seeded with bare upload names their served paths', async () => {
    const count = async (table: 'tb_blog' | 'tb_upload' | 'tb_follow') =>
      Number(
        (
          await env.db
            .selectFrom(table)
            .select((eb) => eb.fn.countAll<string>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const before = [await count('tb_blog'), await count('tb_upload'), await count('tb_follow')];
    const stored = async () => (await env.db.selectFrom('tb_blog').select('images').where('id', '=', '1').executeTakeFirstOrThrow()).images;
    const served = await stored();
    await env.db
      .updateTable('tb_blog')
      .set({ images: served.replaceAll('/imgs/', '/') })
      .where('id', '=', '1')
      .execute();
    expect(await loadDemoContent(env.db, env.redis, env.config.upload.dir)).toEqual({ branches: 0, saleVouchers: 0, blogs: 0, follows: 0 });
    expect([await count('tb_blog'), await count('tb_upload'), await count('tb_follow')]).toEqual(before);
    expect(await stored()).toBe(served);
  });
});
