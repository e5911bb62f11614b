import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signKey } from '../../../../src/modules/social/keys.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';
import { auth, client } from './support.js';

let env: TestEnv;
let app: FastifyInstance;
let http: ReturnType<typeof client>;
let users: Array<{ id: string; token: string }>;
let clock = 0;

/** Noon in Asia/Shanghai (UTC+8) of a calendar day. */
const shanghaiNoon = (year: number, month: number, day: number) => Date.UTC(year, month - 1, day, 4, 0, 0);

beforeAll(async () => {
  env = await createTestEnv();
  users = await createUsersWithSessions(env, 5, 15_500_000_000);
  ({ app } = await buildTestApp(env, undefined, { now: () => clock }));
  http = client(app);
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

async function signOn(user: { token: string }, year: number, month: number, day: number) {
  clock = shanghaiNoon(year, month, day);
  const response = await http.post('/api/user/sign', undefined, auth(user));
  expect(response.statusCode, response.body).toBe(200);
  return response.json().data as { alreadySigned: boolean };
}

const streak = async (user: { token: string }) => (await http.get('/api/user/sign/count', auth(user))).json().data as number;

describe('sign-in', () => {
  it("POST /api/user/sign sets today's bit in sign:{yyyyMM}:{userId}; twice is harmless", async () => {
    const [u] = users;
    expect(await signOn(u!, 2026, 3, 5)).toEqual({ alreadySigned: false });
    expect(await signOn(u!, 2026, 3, 5)).toEqual({ alreadySigned: true });
    expect(await env.redis.getbit(signKey(2026, 3, u!.id), 4)).toBe(1);
    expect(await env.redis.bitcount(signKey(2026, 3, u!.id))).toBe(1);
  });

  it('counts the streak ending today, across a month boundary (and a year boundary)', async () => {
    const [, u, v] = users;
    // 2026-02-25 missing, 26, 27, 28 (February 2026 has 28 days), 03-01, 03-02 signed.
    await signOn(u!, 2026, 2, 20);
    for (const day of [26, 27, 28]) await signOn(u!, 2026, 2, day);
    await signOn(u!, 2026, 3, 1);
    await signOn(u!, 2026, 3, 2);
    expect(await streak(u!)).toBe(5);
    clock = shanghaiNoon(2026, 3, 3); // today not signed yet: no streak ending today
    expect(await streak(u!)).toBe(0);

    // Every day of December 2025 and 2026-01-01..02: 33 days, across the year.
    for (let day = 1; day <= 31; day += 1) await signOn(v!, 2025, 12, day);
    await signOn(v!, 2026, 1, 1);
    await signOn(v!, 2026, 1, 2);
    expect(await streak(v!)).toBe(33);
  });

  it('uses Asia/Shanghai days: 23:30 UTC is already the next day', async () => {
    const [, , , w] = users;
    clock = Date.UTC(2026, 3, 30, 23, 30); // 2026-05-01 07:30 in Shanghai
    await http.post('/api/user/sign', undefined, auth(w!));
    expect(await env.redis.getbit(signKey(2026, 5, w!.id), 0)).toBe(1);
    expect(await env.redis.exists(signKey(2026, 4, w!.id))).toBe(0);
  });

  it('GET /api/user/sign/month gives the month view for the UI', async () => {
    const [, u] = users;
    clock = shanghaiNoon(2026, 3, 2);
    expect((await http.get('/api/user/sign/month', auth(u!))).json().data).toEqual({ month: '202603', daysInMonth: 31, signedDays: [1, 2], today: 2 });
    expect((await http.get('/api/user/sign/month?month=202602', auth(u!))).json().data).toEqual({
      month: '202602',
      daysInMonth: 28,
      signedDays: [20, 26, 27, 28],
      today: null,
    });
    const bad = await http.get('/api/user/sign/month?month=2026-2', auth(u!));
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errorMsg).toContain('querystring.month');
    expect((await http.get('/api/user/sign/month?month=202613', auth(u!))).statusCode).toBe(400);
  });

  it('needs a login', async () => {
    expect((await http.post('/api/user/sign', undefined)).statusCode).toBe(401);
    expect((await http.get('/api/user/sign/count')).statusCode).toBe(401);
  });
});
