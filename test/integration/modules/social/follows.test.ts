import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FOLLOWS_MARKER, followsKey } from '../../../../src/modules/social/keys.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';
import { auth, client } from './support.js';

let env: TestEnv;
let app: FastifyInstance;
let http: ReturnType<typeof client>;
let users: Array<{ id: string; token: string }>;

beforeAll(async () => {
  env = await createTestEnv();
  users = await createUsersWithSessions(env, 8, 15_300_000_000);
  ({ app } = await buildTestApp(env));
  http = client(app);
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

const follows = async (a: { id: string }, b: { id: string }) =>
  (await env.db.selectFrom('tb_follow').select('id').where('user_id', '=', a.id).where('follow_user_id', '=', b.id).executeTakeFirst()) !== undefined;

describe('follows', () => {
  it('PUT /api/follow/{id}/true|false writes tb_follow (repeat-safe); GET /api/follow/or/not/{id} answers', async () => {
    const [a, b] = users;
    expect((await http.get(`/api/follow/or/not/${b!.id}`, auth(a!))).json().data).toBe(false);
    expect((await http.put(`/api/follow/${b!.id}/true`, auth(a!))).statusCode).toBe(200);
    expect((await http.put(`/api/follow/${b!.id}/true`, auth(a!))).statusCode).toBe(200); // no duplicate row
    expect(await follows(a!, b!)).toBe(true);
    const { n } = await env.db
      .selectFrom('tb_follow')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(n)).toBe(1);
    expect((await http.get(`/api/follow/or/not/${b!.id}`, auth(a!))).json().data).toBe(true);
    expect((await http.get(`/api/follow/or/not/${a!.id}`, auth(b!))).json().data).toBe(false); // one-way
    expect(await env.redis.smembers(followsKey(a!.id))).toEqual(expect.arrayContaining([b!.id, FOLLOWS_MARKER]));
    await http.put(`/api/follow/${b!.id}/false`, auth(a!));
    expect(await follows(a!, b!)).toBe(false);
    expect((await http.get(`/api/follow/or/not/${b!.id}`, auth(a!))).json().data).toBe(false);
    expect(await env.redis.sismember(followsKey(a!.id), b!.id)).toBe(0);
  });

  it('rebuilds a missing set from tb_follow (MySQL is the source of truth)', async () => {
    const [, , c, d, e] = users;
    await http.put(`/api/follow/${d!.id}/true`, auth(c!));
    await env.redis.del(followsKey(c!.id));
    // Written behind the app's back while the set is gone: the rebuild must see it.
    await env.db.insertInto('tb_follow').values({ user_id: c!.id, follow_user_id: e!.id }).execute();
    expect((await http.get(`/api/follow/or/not/${e!.id}`, auth(c!))).json().data).toBe(true);
    expect((await env.redis.smembers(followsKey(c!.id))).sort()).toEqual([FOLLOWS_MARKER, d!.id, e!.id].sort());
    // A user who follows nobody gets an existing set (marker only), so no MySQL read every time.
    expect((await http.get(`/api/follow/or/not/${c!.id}`, auth(e!))).json().data).toBe(false);
    expect(await env.redis.smembers(followsKey(e!.id))).toEqual([FOLLOWS_MARKER]);
  });

  it('GET /api/follow/common/{id} returns the users both follow', async () => {
    const [, , , , , f, g, h] = users;
    const [x, y, z] = [users[0]!, users[1]!, users[2]!];
    for (const target of [x, y, z]) await http.put(`/api/follow/${target.id}/true`, auth(f!));
    for (const target of [y, z, h!]) await http.put(`/api/follow/${target.id}/true`, auth(g!));
    await env.redis.del(followsKey(g!.id)); // one side rebuilt from MySQL on the way
    const common = await http.get(`/api/follow/common/${g!.id}`, auth(f!));
    expect(common.statusCode).toBe(200);
    expect(
      common
        .json()
        .data.map((user: { id: string }) => user.id)
        .sort(),
    ).toEqual([y.id, z.id].sort());
    expect(common.json().data[0]).toEqual({ id: expect.any(String), nickName: expect.stringMatching(/^u\d+$/), icon: '' });
    expect((await http.get(`/api/follow/common/${h!.id}`, auth(f!))).json().data).toEqual([]);
  });

  it('refuses bad ids (400 naming the field), unknown users (404), self-follow (400) and anonymous callers (401)', async () => {
    const [a] = users;
    const badId = await http.put('/api/follow/abc/true', auth(a!));
    expect(badId.statusCode).toBe(400);
    expect(badId.json().errorMsg).toContain('params.id');
    const badFlag = await http.put(`/api/follow/${users[1]!.id}/yes`, auth(a!));
    expect(badFlag.statusCode).toBe(400);
    expect(badFlag.json().errorMsg).toContain('params.isFollow');
    expect((await http.put('/api/follow/999999/true', auth(a!))).statusCode).toBe(404);
    expect((await http.get('/api/follow/common/999999', auth(a!))).statusCode).toBe(404);
    const self = await http.put(`/api/follow/${a!.id}/true`, auth(a!));
    expect(self.statusCode).toBe(400);
    expect(self.json().errorMsg).toContain('params.id');
    expect((await http.put(`/api/follow/${users[1]!.id}/true`)).statusCode).toBe(401);
    expect((await http.get(`/api/follow/or/not/${users[1]!.id}`)).statusCode).toBe(401);
  });
});
