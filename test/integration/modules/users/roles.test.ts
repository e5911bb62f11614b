import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdminCommand } from '../../../../src/cli/admin-command.js';
import { sessionKey, userSessionsKey } from '../../../../src/modules/users/keys.js';
import { buildTestApp, createTestEnv, roleService, type InboxSmsSender, type TestEnv } from '../../../support/test-env.js';

const run = promisify(execFile);

let env: TestEnv;
let app: FastifyInstance;
let sms: InboxSmsSender;
let nextPhone = 13_900_100_000;
const newPhone = (): string => String(nextPhone++);

beforeAll(async () => {
  env = await createTestEnv({ SMS_HOURLY_LIMIT_PER_IP: '1000', SMS_INTERVAL_SECONDS: '1' });
  ({ app, sms } = await buildTestApp(env));
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

/** `npm run admin -- ...args` through its function, with what it printed. */
async function admin(...args: string[]): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runAdminCommand(args, roleService(env), { log: (line) => out.push(line), error: (line) => err.push(line) });
  return { code, out, err };
}

/** Logs in over HTTP; a second login of one phone waits out the 1 s between codes. */
async function login(phone: string): Promise<string> {
  let sent = await app.inject({ method: 'POST', url: `/api/user/code?phone=${phone}` });
  if (sent.statusCode === 429) {
    await sleep(Number(sent.headers['retry-after']) * 1000 + 50);
    sent = await app.inject({ method: 'POST', url: `/api/user/code?phone=${phone}` });
  }
  expect(sent.statusCode).toBe(200);
  const response = await app.inject({ method: 'POST', url: '/api/user/login', payload: { phone, code: sms.lastCodeFor(phone) } });
  expect(response.json()).toMatchObject({ success: true });
  return response.json().data as string;
}

const me = async (token: string) => (await app.inject({ url: '/api/user/me', headers: { authorization: token } })).json().data;
/** An administrators-only route (visitor statistics): 200 for an admin, 403 for anyone else. */
const adminRouteStatus = async (token: string) => (await app.inject({ url: '/api/stats/uv', headers: { authorization: token } })).statusCode;
const roleInDb = async (phone: string) => (await env.db.selectFrom('tb_user').select('role').where('phone', '=', phone).executeTakeFirst())?.role;

describe('npm run admin (the command function)', () => {
  it('grants a phone that never logged in: the user is created as an admin, and a login gets an admin session', async () => {
    const phone = newPhone();
    const granted = await admin('grant', phone);
    expect(granted.code).toBe(0);
    expect(granted.out).toEqual([
      expect.stringMatching(new RegExp(`^${phone} \\(user \\d+, user_\\S+\\) is an administrator \\(new user\\); 0 live sessions updated$`)),
    ]);
    expect(await roleInDb(phone)).toBe('admin');

    const token = await login(phone);
    expect(await me(token)).toMatchObject({ role: 'admin' });
    expect(await adminRouteStatus(token)).toBe(200);

    const again = await admin('grant', phone);
    expect(again.out[0]).toContain('is an administrator (unchanged); 1 live session updated');

    const listed = await admin('list');
    expect(listed.code).toBe(0);
    expect(listed.out).toEqual([expect.stringMatching(new RegExp(`^${phone}  user \\d+  user_`))]);

    const revoked = await admin('revoke', phone);
    expect(revoked.code).toBe(0);
    expect(revoked.out[0]).toContain('is no longer an administrator; 1 live session updated');
    expect(await roleInDb(phone)).toBe('user');
    expect((await admin('list')).out).toEqual(['No administrators yet: npm run admin -- grant <phone>']);
  });

  it.each([
    [['grant', '12345'], 'admin: Invalid phone "12345": expected a mainland-China mobile number'],
    [['revoke', '1380000000x'], 'admin: Invalid phone "1380000000x"'],
    [['revoke', '13900199999'], 'admin: No user has the phone 13900199999'],
    [['grant'], 'usage: npm run admin -- <command>'],
    [['grant', '13900199998', 'extra'], 'usage: npm run admin -- <command>'],
    [['promote', '13900199998'], 'admin: unknown command "promote"'],
    [[], 'usage: npm run admin -- <command>'],
  ])('%j is refused with exit code 2 and a message, changing nothing', async (args, message) => {
    const result = await admin(...args);
    expect(result.code).toBe(2);
    expect(result.err.join('\n')).toContain(message);
    expect(result.out).toEqual([]);
    expect(await roleInDb('13900199998')).toBeUndefined();
  });
});

describe('a role change reaches live sessions at once', () => {
  it('every live session of the user gains admin on grant and loses it on revoke; other users keep theirs', async () => {
    const phone = newPhone();
    const [laptop, phoneApp] = [await login(phone), await login(phone)];
    const bystander = await login(newPhone());
    for (const token of [laptop, phoneApp]) {
      expect(await me(token)).toEqual({ id: expect.any(String), nickName: expect.any(String), icon: '', role: 'user' });
      expect(await adminRouteStatus(token)).toBe(403);
    }

    expect((await admin('grant', phone)).out[0]).toContain('2 live sessions updated');
    for (const token of [laptop, phoneApp]) {
      expect((await me(token)).role).toBe('admin');
      expect(await adminRouteStatus(token)).toBe(200);
    }
    expect((await me(bystander)).role).toBe('user');
    expect(await adminRouteStatus(bystander)).toBe(403);

    // Logged out sessions leave the index; the rest lose admin on revoke.
    await app.inject({ method: 'POST', url: '/api/user/logout', headers: { authorization: phoneApp } });
    expect((await admin('revoke', phone)).out[0]).toContain('1 live session updated');
    expect((await me(laptop)).role).toBe('user');
    expect(await adminRouteStatus(laptop)).toBe(403);
  });

  it('drops index entries of expired sessions and never recreates such a session', async () => {
    const phone = newPhone();
    const token = await login(phone);
    const { id } = await me(token);
    const expired = 'f'.repeat(64); // a session digest whose key has expired
    await env.redis.sadd(userSessionsKey(id), expired);

    expect((await admin('grant', phone)).out[0]).toContain('1 live session updated');
    expect(await env.redis.exists(`login:token:${expired}`)).toBe(0);
    expect(await env.redis.smembers(userSessionsKey(id))).toEqual([sessionKey(token).slice('login:token:'.length)]);
    // The session keeps its TTL (the role was written into it, not a new key).
    expect(await env.redis.ttl(sessionKey(token))).toBeGreaterThan(0);

    // A login prunes too.
    await env.redis.sadd(userSessionsKey(id), expired);
    await login(phone);
    expect(await env.redis.sismember(userSessionsKey(id), expired)).toBe(0);
    expect(await env.redis.scard(userSessionsKey(id))).toBe(2);
  });

  it('a session opened before roles existed (no role field) is a plain user', async () => {
    const token = await login(newPhone());
    await env.redis.hdel(sessionKey(token), 'role');
    expect((await me(token)).role).toBe('user');
    expect(await adminRouteStatus(token)).toBe(403);
  });
});

describe('npm run admin (the process)', () => {
  const cli = (...args: string[]) =>
    run(process.execPath, ['--import', 'tsx', 'src/cli/admin.ts', ...args], {
      env: { ...process.env, NODE_ENV: 'production', MYSQL_URL: env.mysqlUrl, REDIS_KEY_PREFIX: env.keyPrefix },
    });

  it('grants and revokes, updating a live session, and exits 2 with a message on a bad phone', async () => {
    const phone = newPhone();
    const token = await login(phone);
    const granted = await cli('grant', phone);
    expect(granted.stdout).toMatch(new RegExp(`${phone} \\(user \\d+, user_\\S+\\) is an administrator; 1 live session updated`));
    expect(await adminRouteStatus(token)).toBe(200);
    expect((await cli('list')).stdout).toContain(phone);

    expect((await cli('revoke', phone)).stdout).toContain('is no longer an administrator; 1 live session updated');
    expect(await adminRouteStatus(token)).toBe(403);

    const refused = await cli('grant', '999').catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 2, stderr: expect.stringContaining('admin: Invalid phone "999"') });
  });
});
