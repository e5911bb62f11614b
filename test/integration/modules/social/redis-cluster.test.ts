import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDemoData } from '../../../../src/infra/seed/load-demo-data.js';
import { closeRedis, createRedis, type RedisClient } from '../../../../src/infra/redis.js';
import { calendarDay, dayStamp } from '../../../../src/lib/calendar/index.js';
import { feedKey, likedKey } from '../../../../src/modules/social/keys.js';
import { shopUvKey, siteUvKey } from '../../../../src/modules/social/keys.js';
import { startRedisCluster, type TestCluster } from '../../../../kit/redis-cluster.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';
import { eventually } from '../../../support/eventually.js';
import { auth, client } from './support.js';

/**
 * The social features on a real 3-master Redis Cluster: every script is single-key, common
 * follows intersect two sets that live in different slots, feed pushes fan out over the nodes.
 * Anything multi-slot would fail here with CROSSSLOT.
 */
let cluster: TestCluster;
let env: TestEnv;
let redis: RedisClient;
let app: FastifyInstance;
let http: ReturnType<typeof client>;
let users: Array<{ id: string; token: string }>;

beforeAll(async () => {
  cluster = await startRedisCluster(3);
  env = await createTestEnv();
  await loadDemoData(env.db);
  const config = { ...env.config, redisClusterNodes: cluster.nodes };
  redis = createRedis(config);
  const clusterEnv = { ...env, config, redis };
  users = await createUsersWithSessions(clusterEnv, 12, 15_800_000_000);
  ({ app } = await buildTestApp(clusterEnv));
  http = client(app);
}, 60_000);

afterAll(async () => {
  await app?.close();
  if (redis) await closeRedis(redis);
  await env?.cleanup();
  await cluster?.stop();
});

describe('social features on Redis Cluster', () => {
  it('follows, common follows, feed fan-out, likes, sign-in and UV work without CROSSSLOT', async () => {
    const [author, ...followers] = users;
    for (const follower of followers) expect((await http.put(`/api/follow/${author!.id}/true`, auth(follower))).statusCode).toBe(200);
    await http.put(`/api/follow/${users[5]!.id}/true`, auth(followers[0]!));
    await http.put(`/api/follow/${users[5]!.id}/true`, auth(followers[1]!));
    const common = await http.get(`/api/follow/common/${followers[1]!.id}`, auth(followers[0]!));
    expect(common.statusCode, common.body).toBe(200);
    expect(
      common
        .json()
        .data.map((user: { id: string }) => user.id)
        .sort(),
    ).toEqual([author!.id, users[5]!.id].sort());

    const blog = (await http.post('/api/blog', { shopId: '1', title: 't', content: 'c' }, auth(author!))).json().data as string;
    for (const follower of followers) expect(await redis.zscore(feedKey(follower.id), blog)).not.toBeNull();
    const page = await http.get('/api/blog/of/follow', auth(followers[3]!));
    expect(page.json().data.list.map((b: { id: string }) => b.id)).toEqual([blog]);

    await Promise.all(Array.from({ length: 20 }, () => http.put(`/api/blog/like/${blog}`, auth(followers[0]!))));
    await Promise.all(followers.slice(1, 6).map((f) => http.put(`/api/blog/like/${blog}`, auth(f))));
    expect(await redis.zcard(likedKey(blog))).toBe(5);
    const row = await env.db.selectFrom('tb_blog').select('liked').where('id', '=', blog).executeTakeFirstOrThrow();
    expect(row.liked).toBe(5);

    expect((await http.post('/api/user/sign', undefined, auth(author!))).statusCode).toBe(200);
    expect((await http.get('/api/user/sign/count', auth(author!))).json().data).toBe(1);
    expect((await http.get('/api/shop/1', auth(author!))).statusCode).toBe(200);
    const today = dayStamp(calendarDay(Date.now()));
    await eventually(async () => expect(await redis.pfcount(shopUvKey('1', today))).toBe(1));
    expect(await redis.pfcount(siteUvKey(today))).toBeGreaterThanOrEqual(1);
  });
});
