import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDemoData } from '../../../../src/infra/seed/load-demo-data.js';
import { feedKey } from '../../../../src/modules/social/keys.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';
import { auth, client } from './support.js';

const FEED_MAX_LENGTH = 30;

let env: TestEnv;
let app: FastifyInstance;
let http: ReturnType<typeof client>;
let users: Array<{ id: string; token: string }>;
let clock = Date.UTC(2026, 5, 1, 4, 0, 0);

beforeAll(async () => {
  env = await createTestEnv({ FEED_MAX_LENGTH: String(FEED_MAX_LENGTH) });
  await loadDemoData(env.db);
  users = await createUsersWithSessions(env, 5, 15_400_000_000);
  ({ app } = await buildTestApp(env, undefined, { now: () => clock }));
  http = client(app);
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

async function publish(author: { token: string }, title: string): Promise<string> {
  const response = await http.post('/api/blog', { shopId: '1', title, content: 'c' }, auth(author));
  expect(response.statusCode, response.body).toBe(200);
  return response.json().data as string;
}

type Page = { list: Array<{ id: string; title: string; name: string }>; minTime: number; offset: number };

/** Follows the cursor like hmdp's front end: lastId = now, offset 0, then the answer's minTime/offset. */
async function readWholeFeed(reader: { token: string }): Promise<{ ids: string[]; pages: Page[] }> {
  const pages: Page[] = [];
  let lastId = clock + 1;
  let offset = 0;
  for (let i = 0; i < 20; i += 1) {
    const response = await http.get(`/api/blog/of/follow?lastId=${lastId}&offset=${offset}`, auth(reader));
    expect(response.statusCode, response.body).toBe(200);
    const page = response.json().data as Page;
    if (page.list.length === 0) break;
    pages.push(page);
    lastId = page.minTime;
    offset = page.offset;
  }
  return { ids: pages.flatMap((page) => page.list.map((blog) => blog.id)), pages };
}

describe('feed (push model)', () => {
  it('pushes new blogs to followers only, and pages across equal timestamps without duplicates or gaps', async () => {
    const [authorA, authorB, reader, stranger] = users;
    await http.put(`/api/follow/${authorA!.id}/true`, auth(reader!));
    await http.put(`/api/follow/${authorB!.id}/true`, auth(reader!));
    const published: string[] = [];
    // 25 blogs on 6 timestamps: runs of 12, 1, 7 (across page boundaries of 10), 3, 1, 1.
    for (const [run, ms] of [
      [12, 0],
      [1, 5],
      [7, 9],
      [3, 20],
      [1, 21],
      [1, 30],
    ] as const) {
      clock = Date.UTC(2026, 5, 1, 4, 0, 0) + ms;
      for (let i = 0; i < run; i += 1) published.push(await publish(i % 2 === 0 ? authorA! : authorB!, `t${ms}-${i}`));
    }
    expect(await env.redis.zcard(feedKey(reader!.id))).toBe(25);
    expect(await env.redis.exists(feedKey(stranger!.id))).toBe(0);

    const { ids, pages } = await readWholeFeed(reader!);
    expect(ids).toHaveLength(25);
    expect(new Set(ids).size).toBe(25);
    expect(new Set(ids)).toEqual(new Set(published));
    expect(pages.map((page) => page.list.length)).toEqual([10, 10, 5]);
    // Newest first: scores never increase along the feed.
    const scores = await Promise.all(ids.map((id) => env.redis.zscore(feedKey(reader!.id), id)));
    expect(scores.map(Number)).toEqual([...scores.map(Number)].sort((a, b) => b - a));
    // The first page ends inside the run of 7 at +9 ms (1 + 1 + 3 = 5 newer ones, then 5 of the 7).
    expect(pages[0]).toMatchObject({ minTime: Date.UTC(2026, 5, 1, 4, 0, 0) + 9, offset: 5 });
    // The second page: the other 2 at +9, 1 at +5, then 7 of the run of 12 at +0.
    expect(pages[1]).toMatchObject({ minTime: Date.UTC(2026, 5, 1, 4, 0, 0), offset: 7 });
    expect(pages[1]!.list[0]!.name).toMatch(/^u\d+$/);
  });

  it('a page made entirely of one timestamp adds to the previous offset (hmdp restarted it)', async () => {
    const [author, , , , reader] = users;
    await http.put(`/api/follow/${author!.id}/true`, auth(reader!));
    clock = Date.UTC(2026, 6, 1);
    const published: string[] = [];
    for (let i = 0; i < 23; i += 1) published.push(await publish(author!, `same-${i}`));
    const first = (await http.get(`/api/blog/of/follow?lastId=${clock}&offset=0`, auth(reader!))).json().data as Page;
    expect(first).toMatchObject({ minTime: clock, offset: 10 });
    const second = (await http.get(`/api/blog/of/follow?lastId=${clock}&offset=10`, auth(reader!))).json().data as Page;
    expect(second).toMatchObject({ minTime: clock, offset: 20 });
    const third = (await http.get(`/api/blog/of/follow?lastId=${clock}&offset=20`, auth(reader!))).json().data as Page;
    expect(third.list).toHaveLength(3);
    const ids = [...first.list, ...second.list, ...third.list].map((blog) => blog.id);
    expect(new Set(ids)).toEqual(new Set(published));
    const fourth = (await http.get(`/api/blog/of/follow?lastId=${clock}&offset=23`, auth(reader!))).json().data as Page;
    expect(fourth.list).toEqual([]);
  });

  it('trims inboxes to FEED_MAX_LENGTH, dropping the oldest', async () => {
    const [author, , , , reader] = users;
    const before = await env.redis.zcard(feedKey(reader!.id));
    expect(before).toBe(23);
    const published: string[] = [];
    for (let i = 0; i < 12; i += 1) {
      clock = Date.UTC(2026, 7, 1) + i;
      published.push(await publish(author!, `new-${i}`));
    }
    expect(await env.redis.zcard(feedKey(reader!.id))).toBe(FEED_MAX_LENGTH);
    const { ids } = await readWholeFeed(reader!);
    expect(ids).toHaveLength(FEED_MAX_LENGTH);
    expect(ids.slice(0, 12)).toEqual([...published].reverse());
  });

  it('needs a login and validates the cursor', async () => {
    expect((await http.get('/api/blog/of/follow?lastId=1')).statusCode).toBe(401);
    const bad = await http.get('/api/blog/of/follow?lastId=x', auth(users[0]!));
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errorMsg).toContain('querystring.lastId');
    const badOffset = await http.get('/api/blog/of/follow?lastId=1&offset=-1', auth(users[0]!));
    expect(badOffset.statusCode).toBe(400);
    expect(badOffset.json().errorMsg).toContain('querystring.offset');
    // No lastId: from the newest.
    expect((await http.get('/api/blog/of/follow', auth(users[2]!))).json().data.list).toHaveLength(10);
  });
});
