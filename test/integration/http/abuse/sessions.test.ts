import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionStore } from '../../../../src/modules/users/session-store.js';
import { sessionKey, userSessionsKey } from '../../../../src/modules/users/keys.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';

/**
 * Sessions do not slide forever (issue #17, item 11): a session ends SESSION_MAX_AGE_SECONDS after
 * its login however busy it is, and a user can end every session at once (log out everywhere).
 */

const MAX_AGE_SECONDS = 2;
let env: TestEnv;
let app: FastifyInstance;

beforeAll(async () => {
  env = await createTestEnv({ SESSION_TTL_SECONDS: '60', SESSION_MAX_AGE_SECONDS: String(MAX_AGE_SECONDS) });
  ({ app } = await buildTestApp(env));
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

const me = (token: string) => app.inject({ url: '/api/user/me', headers: { authorization: token } });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('absolute session age', () => {
  it('ends a session used every 250 ms at its maximum age, and its TTL never reaches past it', async () => {
    const [user] = await createUsersWithSessions(env, 1, 15_920_000_000);
    const token = user!.token;
    // The session's deadline (ms since the epoch), set at its login: MAX_AGE_SECONDS later.
    const deadline = Number(await env.redis.hget(sessionKey(token), 'deadline'));
    expect(deadline).toBeGreaterThan(Date.now());
    expect(deadline).toBeLessThanOrEqual(Date.now() + MAX_AGE_SECONDS * 1000);
    // Each answer against the deadline, whatever the pace a busy machine allows: 200 only for a
    // request sent before it, 401 only for one answered after it (not "the last 200 within 600 ms
    // of it", which a scheduling pause of a few hundred ms could break).
    const statuses: number[] = [];
    while (Date.now() < deadline + 1000) {
      const sentAt = Date.now();
      const response = await me(token);
      statuses.push(response.statusCode);
      if (response.statusCode === 200) {
        expect(sentAt).toBeLessThan(deadline);
        // The sliding TTL (60 s) is cut to what is left of the maximum age.
        const readAt = Date.now();
        expect(await env.redis.pttl(sessionKey(token))).toBeLessThanOrEqual(deadline - readAt + 50);
      } else {
        expect(response.statusCode).toBe(401);
        expect(Date.now()).toBeGreaterThanOrEqual(deadline - 5); // (whole ms of a PTTL)
      }
      await sleep(250);
    }
    expect(statuses[0]).toBe(200); // used, and then ended
    expect(statuses.at(-1)).toBe(401);
    expect((await me(token)).statusCode).toBe(401);
    expect(await env.redis.exists(sessionKey(token))).toBe(0);
  });

  it('gives a session opened before deadlines existed one at its first use', async () => {
    const [user] = await createUsersWithSessions(env, 1, 15_920_000_010);
    const legacy = 'legacy-session-token-without-deadline-0001';
    await env.redis.multi().hset(sessionKey(legacy), { id: user!.id, nickName: 'old', icon: '', role: 'user' }).expire(sessionKey(legacy), 60).exec();
    expect((await me(legacy)).statusCode).toBe(200);
    const deadline = Number(await env.redis.hget(sessionKey(legacy), 'deadline'));
    expect(deadline).toBeGreaterThan(Date.now());
    expect(deadline).toBeLessThanOrEqual(Date.now() + MAX_AGE_SECONDS * 1000 + 100);
  });
});

describe('POST /api/user/logout-all', () => {
  it("ends every session of the user and no one else's", async () => {
    const store = new SessionStore(env.redis, 60, 600);
    const [alice, bob] = await createUsersWithSessions(env, 2, 15_920_000_020);
    const others = await Promise.all([1, 2].map(() => store.create({ id: alice!.id, nickName: 'alice', icon: '', role: 'user' })));
    const aliceTokens = [alice!.token, ...others];
    for (const token of [...aliceTokens, bob!.token]) expect((await me(token)).statusCode).toBe(200);

    const response = await app.inject({ method: 'POST', url: '/api/user/logout-all', headers: { authorization: others[0]! } });
    expect(response.json()).toEqual({ success: true, data: 3 });
    for (const token of aliceTokens) expect((await me(token)).statusCode).toBe(401);
    expect((await me(bob!.token)).statusCode).toBe(200);
    expect(await env.redis.scard(userSessionsKey(alice!.id))).toBe(0);
  });

  it('needs a session', async () => {
    expect((await app.inject({ method: 'POST', url: '/api/user/logout-all' })).statusCode).toBe(401);
  });
});
