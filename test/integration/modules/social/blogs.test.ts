import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDemoData } from '../../../../src/infra/seed/load-demo-data.js';
import { likedKey } from '../../../../src/modules/social/keys.js';
import { multipartFile } from '../../../support/multipart.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';
import { auth, client } from './support.js';

let env: TestEnv;
let app: FastifyInstance;
let http: ReturnType<typeof client>;
let users: Array<{ id: string; token: string }>;
let clock = Date.UTC(2026, 5, 1, 4, 0, 0);

beforeAll(async () => {
  env = await createTestEnv();
  await loadDemoData(env.db);
  users = await createUsersWithSessions(env, 30, 15_100_000_000);
  ({ app } = await buildTestApp(env, undefined, { now: () => clock }));
  http = client(app);
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

async function publish(user: { token: string }, title = 'a visit', extra: Record<string, unknown> = {}): Promise<string> {
  const response = await http.post('/api/blog', { shopId: '1', title, content: 'good food', ...extra }, auth(user));
  expect(response.statusCode, response.body).toBe(200);
  return response.json().data as string;
}

/** A real 1×1 PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

async function uploadImage(user: { token: string }): Promise<string> {
  const { payload, headers } = multipartFile(PNG);
  const response = await app.inject({ method: 'POST', url: '/api/upload/blog', payload, headers: { ...headers, ...auth(user) } });
  expect(response.statusCode, response.body).toBe(200);
  return response.json().data as string;
}

const likedInDb = async (id: string) => (await env.db.selectFrom('tb_blog').select('liked').where('id', '=', id).executeTakeFirstOrThrow()).liked;

describe('blogs', () => {
  it('POST /api/blog saves a blog; GET /api/blog/{id} returns it with its author and isLike', async () => {
    const [author, reader] = users;
    const images = `${await uploadImage(author!)},${await uploadImage(author!)}`;
    const id = await publish(author!, '茶餐厅', { images });
    const response = await http.get(`/api/blog/${id}`, auth(reader!));
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toEqual({
      id,
      shopId: '1',
      userId: author!.id,
      title: '茶餐厅',
      images,
      content: 'good food',
      liked: 0,
      comments: 0,
      createTime: expect.any(String),
      updateTime: expect.any(String),
      name: expect.stringMatching(/^u\d+$/),
      icon: '',
      isLike: false,
    });
  });

  it('refuses bad input with 400 naming the field, unknown blogs with 404, anonymous writers with 401', async () => {
    const [author] = users;
    const badId = await http.get('/api/blog/abc', auth(author!));
    expect(badId.statusCode).toBe(400);
    expect(badId.json().errorMsg).toContain('params.id');
    expect((await http.get('/api/blog/999999', auth(author!))).statusCode).toBe(404);
    expect((await http.put('/api/blog/like/999999', auth(author!))).statusCode).toBe(404);
    expect((await http.get('/api/blog/likes/999999', auth(author!))).statusCode).toBe(404);
    const noShop = await http.post('/api/blog', { shopId: '999999', title: 't', content: 'c' }, auth(author!));
    expect(noShop.statusCode).toBe(400);
    expect(noShop.json().errorMsg).toContain('body.shopId');
    const noTitle = await http.post('/api/blog', { shopId: '1', content: 'c' }, auth(author!));
    expect(noTitle.statusCode).toBe(400);
    expect(noTitle.json().errorMsg).toContain('body.title');
    const tooMany = await http.post(
      '/api/blog',
      { shopId: '1', title: 't', content: 'c', images: Array.from({ length: 10 }, (_, i) => `/blogs/1/1/${i}.png`).join(',') },
      auth(author!),
    );
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.json().errorMsg).toContain('body.images');
    expect((await http.post('/api/blog', { shopId: '1', title: 't', content: 'c' })).statusCode).toBe(401);
    expect((await http.get('/api/blog/of/me')).statusCode).toBe(401);
    expect((await http.get('/api/blog/hot')).statusCode).toBe(200); // public
  });
});

describe('likes', () => {
  it('PUT /api/blog/like/{id} toggles; the zset (score = ms) and tb_blog.liked move together', async () => {
    const [author, fan] = users;
    const id = await publish(author!);
    const first = await http.put(`/api/blog/like/${id}`, auth(fan!));
    expect(first.json().data).toEqual({ isLike: true, liked: 1 });
    expect(Number(await env.redis.zscore(likedKey(id), fan!.id))).toBe(clock);
    expect(await likedInDb(id)).toBe(1);
    expect((await http.get(`/api/blog/${id}`, auth(fan!))).json().data).toMatchObject({ liked: 1, isLike: true });
    const second = await http.put(`/api/blog/like/${id}`, auth(fan!));
    expect(second.json().data).toEqual({ isLike: false, liked: 0 });
    expect(await env.redis.zscore(likedKey(id), fan!.id)).toBeNull();
    expect(await likedInDb(id)).toBe(0);
  });

  it('50 concurrent toggles by one user end with Redis and MySQL agreeing (even count: not liked)', async () => {
    const [author, fan] = users;
    const id = await publish(author!);
    const responses = await Promise.all(Array.from({ length: 50 }, () => http.put(`/api/blog/like/${id}`, auth(fan!))));
    expect(responses.every((response) => response.statusCode === 200)).toBe(true);
    expect(responses.filter((response) => response.json().data.isLike).length).toBe(25);
    expect(await env.redis.zcard(likedKey(id))).toBe(0);
    expect(await likedInDb(id)).toBe(0);
    // One more toggle after the storm: both stores say liked once.
    await http.put(`/api/blog/like/${id}`, auth(fan!));
    expect(await env.redis.zcard(likedKey(id))).toBe(1);
    expect(await likedInDb(id)).toBe(1);
  });

  it('51 concurrent toggles by one user and one each by 20 others: liked = ZCARD = 21', async () => {
    const [author, fan, ...others] = users;
    const id = await publish(author!);
    await Promise.all([
      ...Array.from({ length: 51 }, () => http.put(`/api/blog/like/${id}`, auth(fan!))),
      ...others.slice(0, 20).map((other) => http.put(`/api/blog/like/${id}`, auth(other))),
    ]);
    expect(await env.redis.zcard(likedKey(id))).toBe(21);
    expect(await likedInDb(id)).toBe(21);
  });

  it('GET /api/blog/likes/{id} lists the first five likers in the order they liked', async () => {
    const [author, ...fans] = users;
    const id = await publish(author!);
    const order = [fans[6]!, fans[2]!, fans[9]!, fans[0]!, fans[4]!, fans[1]!, fans[3]!];
    for (const fan of order) {
      clock += 1000;
      await http.put(`/api/blog/like/${id}`, auth(fan));
    }
    const response = await http.get(`/api/blog/likes/${id}`, auth(author!));
    expect(response.json().data.map((user: { id: string }) => user.id)).toEqual(order.slice(0, 5).map((fan) => fan.id));
    expect(response.json().data[0]).toEqual({ id: order[0]!.id, nickName: expect.any(String), icon: '' });
  });
});

describe('lists', () => {
  it("GET /api/blog/hot pages by likes (10 a page) and is public; of/me and of/user page a user's blogs", async () => {
    const local = await createTestEnv();
    try {
      await loadDemoData(local.db);
      const people = await createUsersWithSessions(local, 13, 15_200_000_000);
      const { app: localApp } = await buildTestApp(local);
      const h = client(localApp);
      const ids: string[] = [];
      for (let i = 0; i < 12; i += 1) {
        ids.push((await h.post('/api/blog', { shopId: '1', title: `b${i}`, content: 'c' }, auth(people[0]!))).json().data);
      }
      // Blog i gets i likes.
      for (let i = 0; i < 12; i += 1) {
        await Promise.all(people.slice(1, 1 + i).map((p) => h.put(`/api/blog/like/${ids[i]!}`, auth(p))));
      }
      const page1 = (await h.get('/api/blog/hot?current=1')).json().data as Array<{ id: string; liked: number; isLike: boolean }>;
      expect(page1.map((b) => b.id)).toEqual([...ids].reverse().slice(0, 10));
      expect(page1.map((b) => b.liked)).toEqual([11, 10, 9, 8, 7, 6, 5, 4, 3, 2]);
      expect(page1.every((b) => !b.isLike)).toBe(true); // anonymous
      const page2 = (await h.get('/api/blog/hot?current=2')).json().data as Array<{ id: string }>;
      expect(page2.map((b) => b.id)).toEqual([ids[1], ids[0]]);
      const asFan = (await h.get('/api/blog/hot', auth(people[1]!))).json().data as Array<{ isLike: boolean }>;
      expect(asFan.every((b) => b.isLike)).toBe(true); // people[1] liked every blog with ≥ 1 like
      const mine = (await h.get('/api/blog/of/me?current=1', auth(people[0]!))).json().data as Array<{ id: string }>;
      expect(mine.map((b) => b.id)).toEqual([...ids].reverse().slice(0, 10));
      const theirs = (await h.get(`/api/blog/of/user?id=${people[0]!.id}&current=2`, auth(people[5]!))).json().data as Array<{ id: string }>;
      expect(theirs.map((b) => b.id)).toEqual([ids[1], ids[0]]);
      expect((await h.get(`/api/blog/of/user?id=${people[5]!.id}`, auth(people[5]!))).json().data).toEqual([]);
      const bad = await h.get('/api/blog/of/user?id=0', auth(people[5]!));
      expect(bad.statusCode).toBe(400);
      expect(bad.json().errorMsg).toContain('querystring.id');
      await localApp.close();
    } finally {
      await local.cleanup();
    }
  });
});
