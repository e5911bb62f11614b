import type { FastifyInstance } from 'fastify';
import { Migrator } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { solveChallenge, type Challenge } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { migrateToLatest } from '../../../../src/infra/migrate.js';
import { migrationProvider } from '../../../../src/infra/migrations/index.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, sessionOf, type TestEnv } from '../../../support/test-env.js';
import { HOUR, insertSeckillVoucher } from '../../../support/seckill.js';

/**
 * Each captcha sale sets its own cost (captchaMaxNumber, ALTCHA's maxNumber): its challenges draw
 * their answer from 1..that. PBKDF2 iterations stay one setting of the deployment, kept tiny
 * here: the tests prove whose cost a challenge has, docs/flows/purchase-gate.md gives the time.
 */
const ENV = { PURCHASE_CAPTCHA_ITERATIONS: '10', PURCHASE_GATE_REQUESTS_PER_MINUTE: '0' };

let env: TestEnv;
let app: FastifyInstance;
let admin: { authorization: string };
let users: Array<{ id: string; token: string }>;
let nextUser = 0;
const user = () => users[nextUser++]!;

beforeAll(async () => {
  env = await createTestEnv(ENV);
  await env.db.insertInto('tb_shop').values({ id: '7', name: '103茶餐厅', type_id: '1', address: '台州路1号', x: 120.15, y: 30.33 }).execute();
  users = await createUsersWithSessions(env, 20);
  admin = await sessionOf(env, '999001', 'admin');
  ({ app } = await buildTestApp(env));
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

const createSale = (fields: Record<string, unknown>, headers: Record<string, string> = admin) =>
  app.inject({
    method: 'POST',
    url: '/api/voucher/seckill',
    headers,
    payload: {
      shopId: '7',
      title: 'captcha sale',
      payValue: 100,
      actualValue: 200,
      stock: 50,
      beginTime: new Date(Date.now() - HOUR).toISOString(),
      endTime: new Date(Date.now() + HOUR).toISOString(),
      purchaseGate: 'captcha',
      ...fields,
    },
  });
const patch = (voucherId: string, payload: Record<string, unknown>, headers: Record<string, string> = admin) =>
  app.inject({ method: 'PATCH', url: `/api/voucher/seckill/${voucherId}`, headers, payload });

async function challengeOf(who: { token: string }, voucherId: string, instance = app): Promise<Challenge> {
  const response = await instance.inject({ url: `/api/voucher-order/seckill/${voucherId}/captcha`, headers: { authorization: who.token } });
  expect(response.statusCode, response.body).toBe(200);
  return response.json<{ data: Challenge }>().data;
}

/** The answer the solver found (every attempt from 0 to it was made): what the sale's cost bounds. */
async function answerOf(challenge: Challenge): Promise<number> {
  const solution = await solveChallenge({ challenge, deriveKey, timeout: 0 });
  expect(solution).not.toBeNull();
  return solution!.counter;
}

/** The token request with a solved challenge, and the order it buys. */
async function buyWith(instance: FastifyInstance, who: { token: string }, voucherId: string, challenge: Challenge): Promise<void> {
  const solution = await solveChallenge({ challenge, deriveKey, timeout: 0 });
  const captcha = Buffer.from(JSON.stringify({ challenge, solution })).toString('base64');
  const issued = await instance.inject({
    method: 'POST',
    url: `/api/voucher-order/seckill/${voucherId}/token`,
    headers: { authorization: who.token },
    payload: { captcha },
  });
  expect(issued.statusCode, issued.body).toBe(200);
  const token = issued.json<{ data: { token: string } }>().data.token;
  const ordered = await instance.inject({
    method: 'POST',
    url: `/api/voucher-order/seckill/${voucherId}`,
    headers: { authorization: who.token, 'x-purchase-token': token },
  });
  expect(ordered.json()).toMatchObject({ success: true });
}

describe("a captcha sale's cost is its own", () => {
  it('two sales of different costs give challenges whose answers are drawn from each sale’s maxNumber', async () => {
    const cheap = (await createSale({ captchaMaxNumber: 100 })).json<{ data: string }>().data;
    const dear = (await createSale({})).json<{ data: string }>().data;
    expect((await patch(dear, { captchaMaxNumber: 5_000 })).json()).toMatchObject({ success: true, data: { captchaMaxNumber: 5_000, changed: true } });
    const buyer = user();
    const six = [1, 2, 3, 4, 5, 6];
    const cheapChallenges = await Promise.all(six.map(() => challengeOf(buyer, cheap)));
    const dearChallenges = await Promise.all(six.map(() => challengeOf(buyer, dear)));
    for (const challenge of cheapChallenges) expect(challenge.parameters.data).toMatchObject({ v: cheap, m: 100 });
    for (const challenge of dearChallenges) expect(challenge.parameters.data).toMatchObject({ v: dear, m: 5_000 });
    // The cheap sale's answers never exceed 100; the dear sale's are drawn from 1..5,000: all six
    // at or below 400 (the old global cost) has a chance of 0.08^6, about 1 in 4 million.
    const cheapAnswers = await Promise.all(cheapChallenges.map(answerOf));
    expect(Math.max(...cheapAnswers)).toBeLessThanOrEqual(100);
    const dearAnswers = [];
    for (const challenge of dearChallenges) dearAnswers.push(await answerOf(challenge));
    expect(Math.max(...dearAnswers)).toBeGreaterThan(400);
    expect(Math.max(...dearAnswers)).toBeLessThanOrEqual(5_000);
  });

  it('a PATCH of the cost applies to the next challenge: on this instance at once, on another within about a second; one issued before still buys', async () => {
    const voucherId = (await createSale({ captchaMaxNumber: 100 })).json<{ data: string }>().data;
    const { app: other } = await buildTestApp(env);
    try {
      const [buyer, second] = [user(), user()];
      const before = await challengeOf(buyer, voucherId);
      expect((await challengeOf(second, voucherId, other)).parameters.data).toMatchObject({ m: 100 });
      const patched = await patch(voucherId, { captchaMaxNumber: 3_000 });
      expect(patched.json()).toMatchObject({ success: true, data: { purchaseGate: 'captcha', captchaMaxNumber: 3_000, changed: true } });
      expect((await challengeOf(buyer, voucherId)).parameters.data).toMatchObject({ m: 3_000 });
      await expect.poll(async () => (await challengeOf(second, voucherId, other)).parameters.data?.m, { timeout: 15_000 }).toBe(3_000);
      await buyWith(app, buyer, voucherId, before);

      const audit = await app.inject({ url: `/api/voucher/seckill/${voucherId}/audit`, headers: admin });
      expect(audit.json().data[0]).toMatchObject({ action: 'update', before: { captchaMaxNumber: 100 }, after: { captchaMaxNumber: 3_000 } });
      expect((await patch(voucherId, { captchaMaxNumber: 3_000 })).json().data.changed).toBe(false);
    } finally {
      await other.close();
    }
  });

  it('a new sale without a cost gets 400, the cost every captcha sale had before', async () => {
    const voucherId = (await createSale({})).json<{ data: string }>().data;
    expect((await challengeOf(user(), voucherId)).parameters.data).toMatchObject({ m: 400 });
  });

  it('a cost out of bounds is a 400 naming the field, in English and Chinese, on creation and on PATCH; nothing changes', async () => {
    const voucherId = (await createSale({ captchaMaxNumber: 200 })).json<{ data: string }>().data;
    const range = 'must be a whole number from 100 (less costs a script too little) to 5000 (more takes a phone too long)';
    const zhRange = '应为 100 到 5000 之间的整数（更小则脚本几乎无需付出代价，更大则手机求解过久）';
    for (const value of [99, 5_001, 1.5, 0, -400]) {
      const refused = await patch(voucherId, { captchaMaxNumber: value });
      expect(refused.statusCode, String(value)).toBe(400);
      expect(refused.json().errorMsg).toBe(`body.captchaMaxNumber ${range}`);
    }
    expect((await patch(voucherId, { captchaMaxNumber: 50 }, { ...admin, 'accept-language': 'zh' })).json().errorMsg).toBe(
      `${zhRange}（body.captchaMaxNumber）`,
    );
    const created = await createSale({ captchaMaxNumber: 20_000 });
    expect(created.statusCode).toBe(400);
    expect(created.json().errorMsg).toBe(`body.captchaMaxNumber ${range}`);
    expect((await createSale({ captchaMaxNumber: 20_000 }, { ...admin, 'accept-language': 'zh' })).json().errorMsg).toBe(`${zhRange}（body.captchaMaxNumber）`);

    expect((await app.inject({ url: `/api/voucher/seckill/${voucherId}/audit`, headers: admin })).json().total).toBe(0);
    expect((await challengeOf(user(), voucherId)).parameters.data).toMatchObject({ m: 200 });
    // Both bounds are allowed.
    expect((await patch(voucherId, { captchaMaxNumber: 100 })).statusCode).toBe(200);
    expect((await patch(voucherId, { captchaMaxNumber: 5_000 })).statusCode).toBe(200);
  });
});

describe('migration 0010', () => {
  it('a captcha sale created before it keeps the cost it had (400) and still sells', async () => {
    const old = await createTestEnv(ENV);
    try {
      const migrator = new Migrator({ db: old.db, provider: migrationProvider });
      // Back to before 0010 (the migrations after it first).
      const down = await migrator.migrateTo('0009_order_accept_time');
      expect(down.results?.map((result) => [result.migrationName, result.status])).toEqual([
        ['0011_buckets', 'Success'],
        ['0010_captcha_cost', 'Success'],
      ]);
      const voucherId = await insertSeckillVoucher(old, { stock: 5 });
      await old.db.updateTable('tb_seckill_voucher').set({ purchase_gate: 'captcha' }).where('voucher_id', '=', voucherId).execute();

      expect(await migrateToLatest(old.db)).toEqual(['0010_captcha_cost', '0011_buckets']);
      const row = await old.db.selectFrom('tb_seckill_voucher').select('captcha_max_number').where('voucher_id', '=', voucherId).executeTakeFirstOrThrow();
      expect(row.captcha_max_number).toBe(400);
      const [buyer] = await createUsersWithSessions(old, 1);
      const { app: upgraded } = await buildTestApp(old);
      try {
        const challenge = await challengeOf(buyer!, voucherId, upgraded);
        expect(challenge.parameters.data).toMatchObject({ v: voucherId, m: 400 });
        expect(await answerOf(challenge)).toBeLessThanOrEqual(400);
        await buyWith(upgraded, buyer!, voucherId, challenge);
      } finally {
        await upgraded.close();
      }
    } finally {
      await old.cleanup();
    }
  });
});
