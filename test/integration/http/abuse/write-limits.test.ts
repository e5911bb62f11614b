import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics, type Metrics } from '../../../../src/infra/metrics.js';
import { loadDemoData } from '../../../../src/infra/seed/load-demo-data.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';

/**
 * Per-user write limits (issue 17 item 9): one user published 500 blogs in 1 s and took over
 * the hot list; likes and follows were unlimited. Now each is limited per user (429 +
 * Retry-After, shared by all instances through Redis); uploads: abuse/uploads.test.ts.
 */

const BLOGS_PER_HOUR = 3;
const LIKES_PER_MINUTE = 5;
const FOLLOWS_PER_MINUTE = 2;

let env: TestEnv;
let app: FastifyInstance;
let second: FastifyInstance;
let metrics: Metrics;
let users: Array<{ id: string; token: string }>;

beforeAll(async () => {
  env = await createTestEnv({
    WRITE_LIMIT_BLOGS_PER_HOUR: String(BLOGS_PER_HOUR),
    WRITE_LIMIT_LIKES_PER_MINUTE: String(LIKES_PER_MINUTE),
    WRITE_LIMIT_FOLLOWS_PER_MINUTE: String(FOLLOWS_PER_MINUTE),
  });
  await loadDemoData(env.db);
  users = await createUsersWithSessions(env, 10, 15_400_000_000);
  metrics = createMetrics();
  ({ app } = await buildTestApp(env, undefined, { metrics }));
  // A second instance on the same Redis: the limits are per user, not per instance.
  ({ app: second } = await buildTestApp(env));
});

afterAll(async () => {
  await app?.close();
  await second?.close();
  await env?.cleanup();
});

const publish = (instance: FastifyInstance, user: { token: string }, payload: Record<string, unknown> = { shopId: '1', title: 'spam', content: 'spam' }) =>
  instance.inject({ method: 'POST', url: '/api/blog', headers: { authorization: user.token }, payload });

const blogsOf = async (userId: string) => (await env.db.selectFrom('tb_blog').select('id').where('user_id', '=', userId).execute()).length;

describe('per-user write limits', () => {
  it(`lets one user publish ${BLOGS_PER_HOUR} blogs an hour across instances, even in a burst of 100: the rest 429 + Retry-After`, async () => {
    const [spammer, bystander] = users;
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => publish(i % 2 ? app : second, spammer!)));
    const statuses = answers.map((answer) => answer.statusCode);
    expect(statuses.filter((status) => status === 200)).toHaveLength(BLOGS_PER_HOUR);
    expect(statuses.filter((status) => status === 429)).toHaveLength(100 - BLOGS_PER_HOUR);
    const refused = answers.find((answer) => answer.statusCode === 429)!;
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(60);
    expect(refused.json()).toEqual({ success: false, errorMsg: expect.stringContaining('Too many blogs') });
    expect(await blogsOf(spammer!.id)).toBe(BLOGS_PER_HOUR);
    // Others still publish.
    expect((await publish(app, bystander!)).statusCode).toBe(200);
    const rejections = (await metrics.rateLimitRejections.get()).values.find((value) => value.labels.limit === 'write:blog');
    expect(rejections?.value).toBeGreaterThan(0);
  });

  it('does not count a request refused by validation', async () => {
    const [, , writer] = users;
    for (let i = 0; i < 5; i += 1) expect((await publish(app, writer!, { shopId: '1', content: 'no title' })).statusCode).toBe(400);
    expect((await publish(app, writer!)).statusCode).toBe(200);
  });

  it(`limits likes to ${LIKES_PER_MINUTE} per user and minute`, async () => {
    const [, , , liker, , , , , author] = users;
    const published = await publish(app, author!);
    expect(published.statusCode).toBe(200);
    const blogId = published.json().data as string;
    const statuses = [];
    for (let i = 0; i < LIKES_PER_MINUTE + 2; i += 1) {
      statuses.push((await app.inject({ method: 'PUT', url: `/api/blog/like/${blogId}`, headers: { authorization: liker!.token } })).statusCode);
    }
    expect(statuses).toEqual([...Array<number>(LIKES_PER_MINUTE).fill(200), 429, 429]);
  });

  it(`limits follow changes to ${FOLLOWS_PER_MINUTE} per user and minute`, async () => {
    const [, , , , follower, a, b, c] = users;
    const follow = (target: { id: string }) => app.inject({ method: 'PUT', url: `/api/follow/${target.id}/true`, headers: { authorization: follower!.token } });
    const statuses = [await follow(a!), await follow(b!), await follow(c!)].map((answer) => answer.statusCode);
    expect(statuses).toEqual([200, 200, 429]);
    const follows = await env.db.selectFrom('tb_follow').select('follow_user_id').where('user_id', '=', follower!.id).execute();
    expect(follows).toHaveLength(2);
  });
});
