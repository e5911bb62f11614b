import type { FastifyInstance } from 'fastify';
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REFUSALS } from '../../../../src/modules/seckill/messages.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';
import { buy, insertSeckillVoucher } from '../../../support/seckill.js';

/** Every query the app sends to MariaDB, as Kysely's operation tree (its values included), counted in process. */
class QueryLog implements KyselyPlugin {
  readonly queries: string[] = [];

  transformQuery({ node }: PluginTransformQueryArgs): RootOperationNode {
    this.queries.push(JSON.stringify(node));
    return node;
  }

  async transformResult({ result }: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return result;
  }
}

let env: TestEnv;
let app: FastifyInstance;
let users: Array<{ id: string; token: string }>;
const queryLog = new QueryLog();

beforeAll(async () => {
  // The order route's limits as deployed: 5 orders a second per user. The purchase gate's per-user
  // limit off: every token and captcha request below reaches the voucher's lookup.
  env = await createTestEnv({ ORDER_RATE_LIMIT_PER_USER: '5', PURCHASE_GATE_REQUESTS_PER_MINUTE: '0' });
  users = await createUsersWithSessions(env, 4);
  app = (await buildTestApp(env, undefined, { db: env.db.withPlugin(queryLog) })).app;
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

/** `ids` ordered by one user, `parallel` at a time; the HTTP statuses. */
async function orderAll(token: string, ids: string[], parallel: number): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  const client = async () => {
    while (next < ids.length) statuses.push((await buy(app, token, ids[next++]!)).statusCode);
  };
  await Promise.all(Array.from({ length: parallel }, client));
  return statuses;
}

describe('orders of vouchers that do not exist', () => {
  it('cost no MySQL query per id: the limits come first, then the known sales, read at most a few times a second', async () => {
    await insertSeckillVoucher(env, { stock: 5 });
    const unknownIds = Array.from({ length: 1000 }, (_, index) => String(9_000_000_000 + index * 7919 + Math.floor(Math.random() * 7919)));
    const before = queryLog.queries.length;
    const startedAt = Date.now();
    const statuses = await orderAll(users[0]!.token, unknownIds, 20);
    const seconds = (Date.now() - startedAt) / 1000;
    const queries = queryLog.queries.slice(before);

    const asked = new Set(unknownIds);
    const naming = queries.filter((query) => [...query.matchAll(/"value":"(\d+)"/g)].some(([, value]) => asked.has(value!)));
    const refused = statuses.filter((status) => status === 429).length;
    console.log(`1000 unknown ids in ${seconds.toFixed(1)} s: ${refused} refused 429, ${queries.length} MySQL queries, ${naming.length} naming an id`);
    expect(statuses.filter((status) => status !== 429 && status !== 404)).toEqual([]);
    // 5 a second pass the user's limit (and a first request of each second on the instance).
    expect(statuses.filter((status) => status === 404).length).toBeLessThanOrEqual(6 * Math.ceil(seconds));
    // Deterministic: no query carries one of the ids asked for.
    expect(naming).toEqual([]);
    // The rest are reads of every sale: the gate's (1 a second) and the known sales' (at most 4 a second).
    expect(queries.length).toBeLessThanOrEqual(Math.ceil(seconds) * 5 + 5);
  });

  it('answers an unknown id 404, and sells a voucher created a moment later (not yet in Redis) at once', async () => {
    const missing = '8999999999';
    const refused = await buy(app, users[1]!.token, missing);
    expect(refused.statusCode).toBe(404);
    expect(refused.json().errorMsg).toBe(REFUSALS.unknownVoucher(missing));
    const created = await insertSeckillVoucher(env, { stock: 1 });
    expect((await buy(app, users[2]!.token, created)).json()).toMatchObject({ success: true });
  });
});

describe('purchase tokens and captchas of vouchers that do not exist (issue 40, item 7f)', () => {
  /** A token request (odd ids) or a captcha request (even ids) of `voucherId`. */
  const gateRequest = (voucherId: string, index: number) =>
    index % 2 === 0
      ? app.inject({ url: `/api/voucher-order/seckill/${voucherId}/captcha`, headers: { authorization: users[3]!.token } })
      : app.inject({ method: 'POST', url: `/api/voucher-order/seckill/${voucherId}/token`, headers: { authorization: users[3]!.token } });

  it('cost no MySQL query per id either: the token and captcha routes refuse them from the known sales', async () => {
    const unknownIds = Array.from({ length: 300 }, (_, index) => String(7_000_000_000 + index * 7919 + Math.floor(Math.random() * 7919)));
    const before = queryLog.queries.length;
    const answers: Array<{ statusCode: number; errorMsg: string; voucherId: string }> = [];
    for (let start = 0; start < unknownIds.length; start += 20) {
      const batch = unknownIds.slice(start, start + 20);
      const responses = await Promise.all(batch.map((voucherId, offset) => gateRequest(voucherId, start + offset)));
      answers.push(
        ...responses.map((response, offset) => ({
          statusCode: response.statusCode,
          errorMsg: response.json<{ errorMsg: string }>().errorMsg,
          voucherId: batch[offset]!,
        })),
      );
    }
    const asked = new Set(unknownIds);
    const naming = queryLog.queries.slice(before).filter((query) => [...query.matchAll(/"value":"(\d+)"/g)].some(([, value]) => asked.has(value!)));

    expect(answers.filter((answer) => answer.statusCode !== 404 || answer.errorMsg !== REFUSALS.unknownVoucher(answer.voucherId))).toEqual([]);
    expect(naming).toEqual([]);
  });

  it('still gives a token of a gated sale created a moment ago (not yet among the known sales)', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 1 });
    await env.db.updateTable('tb_seckill_voucher').set({ purchase_gate: 'token' }).where('voucher_id', '=', voucherId).execute();
    const answer = await gateRequest(voucherId, 1);
    expect(answer.statusCode, answer.body).toBe(200);
    expect(answer.json()).toMatchObject({ success: true, data: { token: expect.any(String) } });
  });
});
