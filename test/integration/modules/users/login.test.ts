import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeKey } from '../../../../src/modules/users/keys.js';
import { sessionKey, userSessionsKey } from '../../../../src/modules/users/keys.js';
import { buildTestApp, createTestEnv, type InboxSmsSender, type TestEnv } from '../../../support/test-env.js';

let env: TestEnv;
let app: FastifyInstance;
let sms: InboxSmsSender;
let nextPhone = 13_800_000_000;

/** A fresh phone number per test, so rate limits of one test never touch another. */
const newPhone = (): string => String(nextPhone++);

beforeAll(async () => {
  env = await createTestEnv({ SMS_HOURLY_LIMIT_PER_IP: '1000', LOGIN_CODE_MAX_ATTEMPTS: '3' });
  ({ app, sms } = await buildTestApp(env));
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

async function requestCode(phone: string) {
  return app.inject({ method: 'POST', url: `/api/user/code?phone=${phone}` });
}

async function login(phone: string, code: string) {
  return app.inject({ method: 'POST', url: '/api/user/login', payload: { phone, code } });
}

async function loginAsNewUser(phone = newPhone()): Promise<string> {
  expect((await requestCode(phone)).statusCode).toBe(200);
  const response = await login(phone, sms.lastCodeFor(phone));
  expect(response.json()).toMatchObject({ success: true });
  return response.json().data as string;
}

describe('SMS-code login over HTTP', () => {
  it('sends a 6-digit code, stores it in Redis with a TTL, and logs in with it', async () => {
    const phone = newPhone();
    const sent = await requestCode(phone);
    expect(sent.statusCode).toBe(200);
    expect(sent.json()).toEqual({ success: true });

    const code = sms.lastCodeFor(phone);
    expect(code).toMatch(/^\d{6}$/);
    expect(await env.redis.hget(codeKey(phone), 'code')).toBe(code);
    const ttl = await env.redis.ttl(codeKey(phone));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(env.config.auth.loginCodeTtlSeconds);

    const response = await login(phone, code);
    expect(response.statusCode).toBe(200);
    const token = response.json().data as string;
    expect(token).toMatch(/^[\w-]{43}$/); // 32 random bytes, base64url

    const me = await app.inject({ method: 'GET', url: '/api/user/me', headers: { authorization: token } });
    expect(me.statusCode).toBe(200);
    const user = me.json().data;
    expect(user).toEqual({ id: expect.stringMatching(/^\d+$/), nickName: expect.stringMatching(/^user_/), icon: '', role: 'user' });

    const row = await env.db.selectFrom('tb_user').selectAll().where('phone', '=', phone).executeTakeFirstOrThrow();
    expect(row.id).toBe(user.id);
    expect(row.nick_name).toBe(user.nickName);
  });

  it('creates the user once: a second login of the same phone is the same user', async () => {
    const phone = newPhone();
    const first = await loginAsNewUser(phone);
    await env.redis.del(`rl:sms:phone:interval:${phone}`); // skip the 60 s wait between codes
    const second = await loginAsNewUser(phone);
    expect(second).not.toBe(first);
    const [a, b] = await Promise.all([first, second].map((token) => app.inject({ url: '/api/user/me', headers: { authorization: token } })));
    expect(a!.json().data.id).toBe(b!.json().data.id);
    const rows = await env.db.selectFrom('tb_user').select('id').where('phone', '=', phone).execute();
    expect(rows).toHaveLength(1);
  });

  it('accepts a code only once', async () => {
    const phone = newPhone();
    await requestCode(phone);
    const code = sms.lastCodeFor(phone);
    expect((await login(phone, code)).statusCode).toBe(200);
    const again = await login(phone, code);
    expect(again.statusCode).toBe(400);
    expect(again.json()).toEqual({ success: false, errorMsg: expect.stringContaining('No valid code') });
  });

  it('refuses a wrong code, and burns the code after the allowed number of wrong tries', async () => {
    const phone = newPhone();
    await requestCode(phone);
    const code = sms.lastCodeFor(phone);
    const wrong = code === '000000' ? '111111' : '000000';

    const first = await login(phone, wrong);
    expect(first.statusCode).toBe(400);
    expect(first.json().errorMsg).toBe('Wrong code');
    await login(phone, wrong);
    await login(phone, wrong); // third wrong try of 3 allowed: the code is gone

    expect(await env.redis.exists(codeKey(phone))).toBe(0);
    const late = await login(phone, code);
    expect(late.statusCode).toBe(400);
    expect(late.json().errorMsg).toContain('No valid code');
  });

  it('refuses a login for a phone that never got a code', async () => {
    const response = await login(newPhone(), '123456');
    expect(response.statusCode).toBe(400);
    expect(response.json().success).toBe(false);
  });
});

describe('sessions', () => {
  it('renews the session TTL on every authenticated request, public routes included', async () => {
    const token = await loginAsNewUser();
    const key = sessionKey(token);
    expect(await env.redis.hget(key, 'id')).toMatch(/^\d+$/);
    await env.redis.expire(key, 5); // pretend most of the session has passed

    await app.inject({ url: '/api/health', headers: { authorization: token } });
    const ttl = await env.redis.ttl(key);
    expect(ttl).toBeGreaterThan(5);
    expect(ttl).toBeLessThanOrEqual(env.config.auth.sessionTtlSeconds);
  });

  it('keeps only a hash of the token in Redis', async () => {
    const token = await loginAsNewUser();
    expect(await env.redis.exists(`login:token:${token}`)).toBe(0);
    expect(await env.redis.exists(sessionKey(token))).toBe(1);
  });

  it('also accepts the token as a Bearer credential', async () => {
    const token = await loginAsNewUser();
    const me = await app.inject({ url: '/api/user/me', headers: { authorization: `Bearer ${token}` } });
    expect(me.statusCode).toBe(200);
  });

  it('logs out: the session is deleted and the token no longer works', async () => {
    const token = await loginAsNewUser();
    const { id } = (await app.inject({ url: '/api/user/me', headers: { authorization: token } })).json().data;
    expect(await env.redis.smembers(userSessionsKey(id))).toEqual([sessionKey(token).slice('login:token:'.length)]);
    const logout = await app.inject({ method: 'POST', url: '/api/user/logout', headers: { authorization: token } });
    expect(logout.statusCode).toBe(200);
    expect(logout.json()).toEqual({ success: true });
    expect(await env.redis.exists(sessionKey(token))).toBe(0);
    expect(await env.redis.exists(userSessionsKey(id))).toBe(0); // its last member removed

    const me = await app.inject({ url: '/api/user/me', headers: { authorization: token } });
    expect(me.statusCode).toBe(401);
  });

  it('answers 401 on protected routes without a valid token', async () => {
    for (const headers of [{}, { authorization: 'not-a-token' }, { authorization: 'x'.repeat(43) }]) {
      for (const url of ['/api/user/me', '/api/user/1', '/api/user/info/1']) {
        const response = await app.inject({ url, headers });
        expect(response.statusCode, `${url} ${JSON.stringify(headers)}`).toBe(401);
        expect(response.json()).toEqual({ success: false, errorMsg: 'Please log in first' });
      }
    }
    expect((await app.inject({ method: 'POST', url: '/api/user/logout' })).statusCode).toBe(401);
    // The hook is put on each route as it is registered: the HEAD route Fastify adds for a GET has it too.
    expect((await app.inject({ method: 'HEAD', url: '/api/user/me' })).statusCode).toBe(401);
  });

  it('lets a valid session through on GET and on its HEAD route, and anyone through on a public route', async () => {
    const token = await loginAsNewUser();
    expect((await app.inject({ url: '/api/user/me', headers: { authorization: token } })).statusCode).toBe(200);
    expect((await app.inject({ method: 'HEAD', url: '/api/user/me', headers: { authorization: token } })).statusCode).toBe(200);
    expect((await app.inject({ method: 'HEAD', url: '/api/shop-type/list' })).statusCode).toBe(200);
  });
});

describe('user queries', () => {
  it('returns a user by id, 404 for an unknown one', async () => {
    const token = await loginAsNewUser();
    const me = (await app.inject({ url: '/api/user/me', headers: { authorization: token } })).json().data;
    const byId = await app.inject({ url: `/api/user/${String(me.id)}`, headers: { authorization: token } });
    // Another user's role is not shown: only /user/me has it.
    expect(byId.json()).toEqual({ success: true, data: { id: me.id, nickName: me.nickName, icon: me.icon } });

    const unknown = await app.inject({ url: '/api/user/999999999', headers: { authorization: token } });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().errorMsg).toContain('999999999');
  });

  it('returns the profile from tb_user_info, with ids as strings', async () => {
    const token = await loginAsNewUser();
    const me = (await app.inject({ url: '/api/user/me', headers: { authorization: token } })).json().data;
    const none = await app.inject({ url: `/api/user/info/${String(me.id)}`, headers: { authorization: token } });
    expect(none.json()).toEqual({ success: true });

    await env.db.insertInto('tb_user_info').values({ user_id: me.id, city: '杭州', introduce: 'hi', fans: 3 }).execute();
    const info = await app.inject({ url: `/api/user/info/${String(me.id)}`, headers: { authorization: token } });
    expect(info.json().data).toMatchObject({ userId: me.id, city: '杭州', introduce: 'hi', fans: 3, birthday: null });
  });
});

describe('bad input gets 400 with the field named', () => {
  it.each([
    ['phone missing', '/api/user/code', 'querystring.phone is required'],
    ['phone too short', '/api/user/code?phone=1381234', 'querystring.phone must be a mainland-China mobile number'],
    ['phone not mobile', '/api/user/code?phone=12812345678', 'querystring.phone must be a mainland-China mobile number'],
  ])('%s', async (_case, url, message) => {
    const response = await app.inject({ method: 'POST', url });
    expect(response.statusCode).toBe(400);
    expect(response.json().errorMsg).toContain(message);
  });

  it.each([
    [{ phone: '13812345678' }, 'body.code is required'],
    [{ code: '123456' }, 'body.phone is required'],
    [{ phone: '13812345678', code: '12345' }, 'body.code must be the 6-digit code'],
    [{ phone: { number: '13812345678' }, code: '123456' }, 'body.phone must be a mainland-China mobile number'],
  ])('login body %j', async (payload, message) => {
    const response = await app.inject({ method: 'POST', url: '/api/user/login', payload });
    expect(response.statusCode).toBe(400);
    expect(response.json().errorMsg).toContain(message);
  });

  it('malformed JSON', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/api/user/login',
      headers: { 'content-type': 'application/json' },
      payload: '{"phone":',
    });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ success: false, errorMsg: expect.stringContaining('JSON') });
  });

  it('an id that is not a positive integer', async () => {
    const token = await loginAsNewUser();
    for (const id of ['abc', '0', '-1', '1.5', '99999999999999999999']) {
      const response = await app.inject({ url: `/api/user/${id}`, headers: { authorization: token } });
      expect(response.statusCode, id).toBe(400);
      expect(response.json().errorMsg).toBe('params.id must be a positive integer id');
    }
  });
});
