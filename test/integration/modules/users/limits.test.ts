import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UserRepository } from '../../../../src/modules/users/user-repository.js';
import { buildTestApp, createTestEnv, type InboxSmsSender, type TestEnv } from '../../../support/test-env.js';

let env: TestEnv;
let app: FastifyInstance;
let sms: InboxSmsSender;

beforeAll(async () => {
  env = await createTestEnv({
    LOGIN_CODE_TTL_SECONDS: '1',
    SESSION_TTL_SECONDS: '2',
    SMS_INTERVAL_SECONDS: '1',
    SMS_DAILY_LIMIT_PER_PHONE: '2',
    SMS_HOURLY_LIMIT_PER_IP: '3',
  });
  ({ app, sms } = await buildTestApp(env));
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

function requestCode(phone: string, remoteAddress = '10.0.0.1') {
  return app.inject({ method: 'POST', url: `/api/user/code?phone=${phone}`, remoteAddress });
}

describe('rate limits on sending codes', () => {
  it('allows one code per phone per interval, then a daily cap, answering 429 with Retry-After', async () => {
    const phone = '13900000001';
    expect((await requestCode(phone, '10.0.1.1')).statusCode).toBe(200);

    const tooSoon = await requestCode(phone, '10.0.1.2');
    expect(tooSoon.statusCode).toBe(429);
    expect(tooSoon.json()).toEqual({ success: false, errorMsg: expect.stringContaining('for this phone') });
    expect(Number(tooSoon.headers['retry-after'])).toBeGreaterThanOrEqual(1);

    await sleep(1_100);
    expect((await requestCode(phone, '10.0.1.3')).statusCode).toBe(200);
    await sleep(1_100);
    const overDailyCap = await requestCode(phone, '10.0.1.4');
    expect(overDailyCap.statusCode).toBe(429);
    expect(Number(overDailyCap.headers['retry-after'])).toBeGreaterThan(3600);
    expect(sms.sent.filter((message) => message.phone === phone)).toHaveLength(2);
  });

  it('limits codes per client IP across phones, without touching other IPs', async () => {
    for (const phone of ['13900000011', '13900000012', '13900000013']) {
      expect((await requestCode(phone, '10.0.2.1')).statusCode).toBe(200);
    }
    const fourth = await requestCode('13900000014', '10.0.2.1');
    expect(fourth.statusCode).toBe(429);
    expect(fourth.json().errorMsg).toContain('from this address');
    expect((await requestCode('13900000014', '10.0.2.2')).statusCode).toBe(200);
  });
});

describe('expiry', () => {
  it('a code expires after its TTL', async () => {
    const phone = '13900000021';
    await requestCode(phone, '10.0.3.1');
    const code = sms.lastCodeFor(phone);
    await sleep(1_300);
    const response = await app.inject({ method: 'POST', url: '/api/user/login', payload: { phone, code } });
    expect(response.statusCode).toBe(400);
    expect(response.json().errorMsg).toContain('No valid code');
  });

  it('a session lives as long as it is used and ends after TTL of silence', async () => {
    const phone = '13900000031';
    await requestCode(phone, '10.0.3.2');
    const login = await app.inject({ method: 'POST', url: '/api/user/login', payload: { phone, code: sms.lastCodeFor(phone) } });
    const headers = { authorization: login.json().data as string };

    for (let i = 0; i < 3; i += 1) {
      await sleep(1_000); // 3 s in all: past the 2 s TTL, but never 2 s without a request
      expect((await app.inject({ url: '/api/user/me', headers })).statusCode).toBe(200);
    }
    await sleep(2_200);
    expect((await app.inject({ url: '/api/user/me', headers })).statusCode).toBe(401);
  });
});

describe('first login races', () => {
  it('creates exactly one user when many first logins of one phone run at once', async () => {
    const users = new UserRepository(env.db);
    const rows = await Promise.all(Array.from({ length: 10 }, (_, i) => users.findOrCreateByPhone('13900000041', `n${i}`)));
    expect(new Set(rows.map((row) => row.id)).size).toBe(1);
    const count = await env.db
      .selectFrom('tb_user')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('phone', '=', '13900000041')
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(1);
  });
});
