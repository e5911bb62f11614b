import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenSigner } from '../../../../src/lib/signed-token/index.js';
import { solveChallenge, type Challenge } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { CaptchaChallenges } from '../../../../src/modules/seckill/gate/captcha-challenges.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, sessionOf, type TestEnv } from '../../../support/test-env.js';
import { HOUR, insertSeckillVoucher } from '../../../support/seckill.js';

const NEW_KEY = { kid: 'k2', secret: 'n'.repeat(40) };
const OLD_KEY = { kid: 'k1', secret: 'o'.repeat(40) };
const GATE_REQUESTS_PER_MINUTE = 8;
/** A cheap proof of work: the test proves the mechanism, docs/flows/purchase-gate.md gives the real cost. */
const CAPTCHA_ITERATIONS = 10;
/** The captcha sales' cost: the lowest a sale may set (captcha-cost.test.ts proves each sale's own cost). */
const CAPTCHA_MAX_NUMBER = 100;

let env: TestEnv;
let app: FastifyInstance;
let users: Array<{ id: string; token: string }>;
let admin: { authorization: string };
let nextUser = 0;
const user = () => users[nextUser++]!;

beforeAll(async () => {
  env = await createTestEnv({
    PURCHASE_TOKEN_KEYS: `${NEW_KEY.kid}:${NEW_KEY.secret},${OLD_KEY.kid}:${OLD_KEY.secret}`,
    PURCHASE_TOKEN_TTL_SECONDS: '60',
    PURCHASE_GATE_REQUESTS_PER_MINUTE: String(GATE_REQUESTS_PER_MINUTE),
    PURCHASE_CAPTCHA_ITERATIONS: String(CAPTCHA_ITERATIONS),
  });
  users = await createUsersWithSessions(env, 40);
  admin = await sessionOf(env, '999001', 'admin');
  ({ app } = await buildTestApp(env));
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

/** A sale gated with `mode` through the administrators' PATCH (with `limitPerUser` if given; a captcha at CAPTCHA_MAX_NUMBER). */
async function gatedSale(mode: 'token' | 'captcha', window: { begin?: Date; end?: Date } = {}, limitPerUser?: number): Promise<string> {
  const voucherId = await insertSeckillVoucher(env, { stock: 100, ...window });
  const captcha = mode === 'captcha' ? { captchaMaxNumber: CAPTCHA_MAX_NUMBER } : {};
  await setSale(voucherId, { purchaseGate: mode, ...captcha, ...(limitPerUser === undefined ? {} : { limitPerUser }) });
  return voucherId;
}

async function setSale(voucherId: string, payload: Record<string, unknown>): Promise<void> {
  const patched = await app.inject({ method: 'PATCH', url: `/api/voucher/seckill/${voucherId}`, headers: admin, payload });
  expect(patched.json()).toMatchObject({ success: true, data: { changed: true } });
}

const askToken = (who: { token: string }, voucherId: string, captcha?: string) =>
  app.inject({
    method: 'POST',
    url: `/api/voucher-order/seckill/${voucherId}/token`,
    headers: { authorization: who.token },
    ...(captcha === undefined ? {} : { payload: { captcha } }),
  });
const order = (who: { token: string }, voucherId: string, purchaseToken?: string, idempotencyKey?: string) =>
  app.inject({
    method: 'POST',
    url: `/api/voucher-order/seckill/${voucherId}`,
    headers: {
      authorization: who.token,
      ...(purchaseToken === undefined ? {} : { 'x-purchase-token': purchaseToken }),
      ...(idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }),
    },
  });
async function tokenOf(who: { token: string }, voucherId: string, captcha?: string): Promise<string> {
  const response = await askToken(who, voucherId, captcha);
  expect(response.statusCode, response.body).toBe(200);
  return response.json<{ data: { token: string } }>().data.token;
}
async function challengeOf(who: { token: string }, voucherId: string): Promise<Challenge> {
  const response = await app.inject({ url: `/api/voucher-order/seckill/${voucherId}/captcha`, headers: { authorization: who.token } });
  expect(response.statusCode, response.body).toBe(200);
  return response.json<{ data: Challenge }>().data;
}
/** The ALTCHA payload of a solved challenge, as the web app (and ALTCHA's widget) sends it; `attempts` counts the key derivations. */
async function solved(challenge: Challenge, attempts = { count: 0 }): Promise<string> {
  const counting: typeof deriveKey = (...args) => {
    attempts.count += 1;
    return deriveKey(...args);
  };
  const solution = await solveChallenge({ challenge, deriveKey: counting });
  expect(solution).not.toBeNull();
  return Buffer.from(JSON.stringify({ challenge, solution })).toString('base64');
}

describe('purchase tokens', () => {
  it('an ungated sale (the default) takes orders without a token, as hmdp does', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 5 });
    expect((await order(user(), voucherId)).json().success).toBe(true);
  });

  it('a gated sale refuses an order without a token (403) and takes one with a valid token', async () => {
    const voucherId = await gatedSale('token');
    const buyer = user();
    const refused = await order(buyer, voucherId);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().errorMsg).toMatch(/needs a purchase token/);
    const ok = await order(buyer, voucherId, await tokenOf(buyer, voucherId));
    expect(ok.json()).toMatchObject({ success: true });
  });

  it('before the window opens, no token: 425 with the time to wait', async () => {
    const voucherId = await gatedSale('token', { begin: new Date(Date.now() + 90_000), end: new Date(Date.now() + HOUR) });
    const response = await askToken(user(), voucherId);
    expect(response.statusCode).toBe(425);
    const wait = Number(response.headers['retry-after']);
    expect(wait).toBeGreaterThan(80);
    expect(wait).toBeLessThanOrEqual(91);
    expect(response.json().errorMsg).toMatch(/The sale opens in \d+ s/);
  });

  it('refuses expired, forged, unknown-key, other-user and other-voucher tokens with a 403 naming the fault', async () => {
    const voucherId = await gatedSale('token');
    const otherVoucher = await gatedSale('token');
    const [buyer, other] = [user(), user()];
    const expired = new TokenSigner([NEW_KEY], () => Date.now() - 120_000).sign([buyer.id, voucherId], 60_000).token;
    const good = await tokenOf(buyer, voucherId);
    const [kid = '', payload = '', mac = ''] = good.split('.');
    const forgedPayload = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), c: [other.id, voucherId] })).toString(
      'base64url',
    );
    const cases: Array<[string, { token: string }, string, RegExp]> = [
      [expired, buyer, voucherId, /expired/],
      [`${kid}.${forgedPayload}.${mac}`, other, voucherId, /forged/],
      [new TokenSigner([{ kid: 'k9', secret: 'x'.repeat(40) }]).sign([buyer.id, voucherId], 60_000).token, buyer, voucherId, /key this server does not know/],
      ['not-a-token', buyer, voucherId, /malformed/],
      [good, other, voucherId, /another user/],
      [good, buyer, otherVoucher, /another voucher/],
    ];
    for (const [token, who, voucher, message] of cases) {
      const response = await order(who, voucher, token);
      expect(response.statusCode, String(message)).toBe(403);
      expect(response.json().errorMsg).toMatch(message);
    }
    expect((await order(buyer, voucherId, good)).json().success).toBe(true);
  });

  it('key rotation: a token signed with the older key still verifies; new tokens use the first key', async () => {
    const voucherId = await gatedSale('token');
    const buyer = user();
    expect((await tokenOf(buyer, voucherId)).startsWith(`${NEW_KEY.kid}.`)).toBe(true);
    const signedWithOldKey = new TokenSigner([OLD_KEY]).sign([buyer.id, voucherId, 'token'], 60_000).token;
    expect((await order(buyer, voucherId, signedWithOldKey)).json().success).toBe(true);
  });

  it(`limits token and captcha requests per user to ${GATE_REQUESTS_PER_MINUTE} a minute (429)`, async () => {
    const voucherId = await gatedSale('token');
    const buyer = user();
    const statuses: number[] = [];
    for (let i = 0; i <= GATE_REQUESTS_PER_MINUTE; i++) statuses.push((await askToken(buyer, voucherId)).statusCode);
    expect(statuses.slice(0, GATE_REQUESTS_PER_MINUTE).every((status) => status === 200)).toBe(true);
    expect(statuses.at(-1)).toBe(429);
    expect((await askToken(user(), voucherId)).statusCode).toBe(200);
  });

  it('turning the gate off again lets orders through without a token', async () => {
    const voucherId = await gatedSale('token');
    await app.inject({ method: 'PATCH', url: `/api/voucher/seckill/${voucherId}`, headers: admin, payload: { purchaseGate: 'off' } });
    expect((await order(user(), voucherId)).json().success).toBe(true);
    const refused = await app.inject({ method: 'PATCH', url: `/api/voucher/seckill/${voucherId}`, headers: admin, payload: { purchaseGate: 'always' } });
    expect(refused.statusCode).toBe(400);
  });
});

describe('a token buys one order, under the gate it was issued for', () => {
  it('a token taken while the sale was off, or asked only for a token, does not buy once the sale asks for more (403)', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 100 });
    const buyer = user();
    const takenWhileOff = await tokenOf(buyer, voucherId);
    await setSale(voucherId, { purchaseGate: 'token' });
    const takenUnderToken = await tokenOf(buyer, voucherId);
    const refusedOff = await order(buyer, voucherId, takenWhileOff);
    expect(refusedOff.statusCode).toBe(403);
    expect(refusedOff.json().errorMsg).toMatch(/taken while the sale asked for no token: get a new one/);
    await setSale(voucherId, { purchaseGate: 'captcha' });
    const refusedToken = await order(buyer, voucherId, takenUnderToken);
    expect(refusedToken.statusCode).toBe(403);
    expect(refusedToken.json().errorMsg).toMatch(/taken before the sale asked for a captcha: get a new one/);
  });

  it('with limitPerUser 3, one token buys one order; the next orders with it are refused (403), one with a new token is accepted', async () => {
    const voucherId = await gatedSale('token', {}, 3);
    const buyer = user();
    const token = await tokenOf(buyer, voucherId);
    const answers = await Promise.all([0, 1, 2].map(() => order(buyer, voucherId, token)));
    expect(answers.filter((answer) => answer.json().success === true)).toHaveLength(1);
    for (const refused of answers.filter((answer) => answer.json().success !== true)) {
      expect(refused.statusCode).toBe(403);
      expect(refused.json().errorMsg).toMatch(/bought an order already: get a new one/);
    }
    expect((await order(buyer, voucherId, token)).statusCode).toBe(403);
    expect((await order(buyer, voucherId, await tokenOf(buyer, voucherId))).json().success).toBe(true);
  });

  it('a refused order gives its token back: refused while paused, it buys after the resume', async () => {
    const voucherId = await gatedSale('token');
    const buyer = user();
    const token = await tokenOf(buyer, voucherId);
    expect((await app.inject({ method: 'POST', url: `/api/voucher/seckill/${voucherId}/pause`, headers: admin })).statusCode).toBe(200);
    const refused = await order(buyer, voucherId, token);
    expect(refused.json()).toMatchObject({ success: false });
    expect(refused.statusCode).toBe(200);
    expect((await app.inject({ method: 'POST', url: `/api/voucher/seckill/${voucherId}/resume`, headers: admin })).statusCode).toBe(200);
    expect((await order(buyer, voucherId, token)).json().success).toBe(true);
  });

  it('a retry after an unknown outcome: the same token with the same Idempotency-Key gets the same order; with another key, 403', async () => {
    const voucherId = await gatedSale('token', {}, 3);
    const buyer = user();
    const token = await tokenOf(buyer, voucherId);
    const first = (await order(buyer, voucherId, token, 'retry-1')).json();
    expect(first.success).toBe(true);
    expect((await order(buyer, voucherId, token, 'retry-1')).json()).toEqual(first);
    const otherKey = await order(buyer, voucherId, token, 'retry-2');
    expect(otherKey.statusCode).toBe(403);
    expect(otherKey.json().errorMsg).toMatch(/bought an order already/);
  });
});

describe('captcha before the token: an ALTCHA proof of work', () => {
  it("the challenge is work, not a picture: solving it takes as many key derivations as its answer, at the sale's cost; the token buys", async () => {
    const voucherId = await gatedSale('captcha');
    const buyer = user();
    expect((await askToken(buyer, voucherId)).json().errorMsg).toMatch(/needs a captcha/);
    const challenge = await challengeOf(buyer, voucherId);
    expect(challenge.parameters).toMatchObject({
      algorithm: 'PBKDF2/SHA-256',
      cost: CAPTCHA_ITERATIONS,
      data: { u: buyer.id, v: voucherId, m: CAPTCHA_MAX_NUMBER },
    });
    const attempts = { count: 0 };
    const payload = await solved(challenge, attempts);
    const { solution } = JSON.parse(Buffer.from(payload, 'base64').toString()) as { solution: { counter: number } };
    expect(solution.counter).toBeGreaterThanOrEqual(1);
    expect(solution.counter).toBeLessThanOrEqual(CAPTCHA_MAX_NUMBER);
    expect(attempts.count).toBe(solution.counter + 1); // every attempt from 0 to the answer: no shortcut
    const token = await tokenOf(buyer, voucherId, payload);
    expect((await order(buyer, voucherId, token)).json().success).toBe(true);
  });

  it('a solved challenge buys one token: the same payload again is refused (403), also through another instance', async () => {
    const voucherId = await gatedSale('captcha');
    const buyer = user();
    const payload = await solved(await challengeOf(buyer, voucherId));
    await tokenOf(buyer, voucherId, payload);
    const { app: other } = await buildTestApp(env);
    try {
      const again = await other.inject({
        method: 'POST',
        url: `/api/voucher-order/seckill/${voucherId}/token`,
        headers: { authorization: buyer.token },
        payload: { captcha: payload },
      });
      expect(again.statusCode).toBe(403);
      expect(again.json().errorMsg).toMatch(/used already: get a new one/);
    } finally {
      await other.close();
    }
  });

  it('refuses an answer without the work, an expired, forged, malformed, other-user or other-voucher challenge (403 naming it)', async () => {
    const voucherId = await gatedSale('captcha');
    const otherVoucher = await gatedSale('captcha');
    const [buyer, other] = [user(), user()];
    const keys = [NEW_KEY, OLD_KEY];
    const cost = { iterations: CAPTCHA_ITERATIONS, ttlSeconds: 120 };
    const expired = await new CaptchaChallenges(env.redis, keys, cost, () => Date.now() - 200_000).create(buyer.id, voucherId, CAPTCHA_MAX_NUMBER);
    const forged = await new CaptchaChallenges(env.redis, [{ kid: NEW_KEY.kid, secret: 'f'.repeat(40) }], cost).create(buyer.id, voucherId, CAPTCHA_MAX_NUMBER);
    const challenge = await challengeOf(buyer, voucherId);
    const noWork = Buffer.from(JSON.stringify({ challenge, solution: { counter: 3, derivedKey: challenge.parameters.keyPrefix.padEnd(64, '0') } })).toString(
      'base64',
    );
    const cases: Array<[string, { token: string }, string, RegExp]> = [
      [noWork, buyer, voucherId, /does not solve its challenge/],
      [await solved(expired), buyer, voucherId, /expired/],
      [await solved(forged), buyer, voucherId, /not issued by this server/],
      ['not-a-payload', buyer, voucherId, /malformed/],
      [await solved(challenge), other, voucherId, /another user/],
      [await solved(challenge), buyer, otherVoucher, /another voucher/],
    ];
    for (const [payload, who, voucher, message] of cases) {
      const response = await askToken(who, voucher, payload);
      expect(response.statusCode, String(message)).toBe(403);
      expect(response.json().errorMsg).toMatch(message);
    }
    await tokenOf(buyer, voucherId, await solved(challenge)); // refused answers did not use it up
  });

  it('a sale without a captcha has none to give (409)', async () => {
    const voucherId = await gatedSale('token');
    const response = await app.inject({ url: `/api/voucher-order/seckill/${voucherId}/captcha`, headers: { authorization: user().token } });
    expect(response.statusCode).toBe(409);
  });
});
