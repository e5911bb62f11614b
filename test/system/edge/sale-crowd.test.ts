import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SaleKeys } from '../../../src/modules/seckill/index.js';
import { startEdge, type Edge } from '../../../kit/edge.js';
import { eventually } from '../../support/eventually.js';
import { expectSoldOutExactly, HOUR } from '../../support/seckill.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, sessionOf, type TestEnv } from '../../support/test-env.js';

/**
 * A whole sale through the edge: 500 units, 2,000 buyers, each buying until it is accepted or told
 * "Sold out" (a pause is waited out). Sold out, then raised by 100 for the buyers still to come,
 * then paused and resumed while they buy: every unit is sold, to distinct users, and every order a
 * buyer was told about is in MySQL — the sale checks of the bench (expectSoldOutExactly) — while
 * the edge refused some of the orders itself.
 */
let env: TestEnv;
let app: FastifyInstance;
let edge: Edge;
let admin: { authorization: string };
let buyers: Array<{ id: string; token: string }>;

const STOCK = 500;
const RAISE = 100;
const BUYERS = 2_000;
const AT_ONCE = 40;

beforeAll(async () => {
  env = await createTestEnv({ SECKILL_WORKER: 'true' });
  await env.db.insertInto('tb_shop').values({ id: '1', name: 'shop', type_id: '1', address: 'road 1', x: 120.15, y: 30.33 }).execute();
  ({ app } = await buildTestApp(env));
  const appUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  edge = await startEdge(env.config, { salePool: [appUrl.replace('http://', '')], workers: 2 });
  admin = await sessionOf(env, '999001', 'admin');
  buyers = await createUsersWithSessions(env, BUYERS + 2, 18_000_000_000);
}, 120_000);

afterAll(async () => {
  await edge?.stop();
  await app?.close();
  await env?.cleanup();
});

interface Outcome {
  orderId?: string;
  /** Answers the edge gave itself (no X-Upstream). */
  atEdge: number;
}

const order = (voucherId: string, token: string) =>
  fetch(`${edge.url}/api/voucher-order/seckill/${voucherId}`, { method: 'POST', headers: { authorization: token, 'accept-language': 'en' } });

/** One buyer: orders until accepted or sold out; a pause, a 429 or a 503 is retried a moment later. */
async function buy(voucherId: string, token: string): Promise<Outcome> {
  let atEdge = 0;
  for (;;) {
    const response = await order(voucherId, token);
    if (response.headers.get('x-upstream') === null) atEdge += 1;
    const body = (await response.json()) as { success: boolean; data?: string; errorMsg?: string };
    if (body.success) return { orderId: body.data!, atEdge };
    if (body.errorMsg === 'Sold out') return { atEdge };
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The buyers, AT_ONCE at a time; `during` runs beside them, once `acceptedBefore` orders were accepted. */
async function crowd(voucherId: string, tokens: string[], during?: { acceptedBefore: number; run: () => Promise<void> }) {
  const outcomes: Outcome[] = [];
  let next = 0;
  let accepted = 0;
  let side: Promise<void> | undefined;
  const lane = async () => {
    while (next < tokens.length) {
      const outcome = await buy(voucherId, tokens[next++]!);
      outcomes.push(outcome);
      if (outcome.orderId !== undefined) accepted += 1;
      if (during && side === undefined && accepted >= during.acceptedBefore) side = during.run();
    }
  };
  await Promise.all(Array.from({ length: AT_ONCE }, lane));
  await side;
  return outcomes;
}

async function adminCall(method: 'POST' | 'PATCH', url: string, payload?: object): Promise<void> {
  const response = await app.inject({ method, url, headers: admin, ...(payload ? { payload } : {}) });
  expect(response.statusCode, response.body).toBe(200);
}

/** A probe's order is refused by the edge itself (the view of the sale is known and fresh there). */
async function refusedAtEdge(voucherId: string, token: string): Promise<void> {
  await eventually(async () => expect((await order(voucherId, token)).headers.get('x-upstream')).toBeNull());
}

describe('a whole sale through the edge', () => {
  it('sells every unit to 2,000 buyers across a sell-out, a raise, a pause and a resume', async () => {
    const created = await app.inject({
      method: 'POST',
      url: '/api/voucher/seckill',
      headers: admin,
      payload: {
        shopId: '1',
        title: 'crowd',
        payValue: 100,
        actualValue: 200,
        stock: STOCK,
        beginTime: new Date(Date.now() - HOUR).toISOString(),
        endTime: new Date(Date.now() + HOUR).toISOString(),
      },
    });
    expect(created.statusCode, created.body).toBe(200);
    const voucherId = created.json<{ data: string }>().data;
    const tokens = buyers.slice(0, BUYERS).map((buyer) => buyer.token);
    const [probeA, probeB] = buyers.slice(BUYERS);

    // The first half of the crowd buys it out; the edge learns it is sold out.
    const first = await crowd(voucherId, tokens.slice(0, BUYERS / 2));
    expect(first.filter((outcome) => outcome.orderId !== undefined)).toHaveLength(STOCK);
    await refusedAtEdge(voucherId, probeA!.token);

    // Raised by 100; the second half buys, paused and resumed midway.
    await adminCall('PATCH', `/api/voucher/seckill/${voucherId}`, { stock: STOCK + RAISE });
    const second = await crowd(voucherId, tokens.slice(BUYERS / 2), {
      acceptedBefore: RAISE / 2,
      run: async () => {
        await adminCall('POST', `/api/voucher/seckill/${voucherId}/pause`);
        await refusedAtEdge(voucherId, probeB!.token);
        await adminCall('POST', `/api/voucher/seckill/${voucherId}/resume`);
      },
    });

    const outcomes = [...first, ...second];
    const orderIds = outcomes.flatMap((outcome) => (outcome.orderId === undefined ? [] : [outcome.orderId]));
    expect(outcomes.reduce((sum, outcome) => sum + outcome.atEdge, 0)).toBeGreaterThan(0);
    const saleKey = new SaleKeys(env.config.seckill.streamShards).voucher(voucherId).voucher;
    await eventually(
      async () => expect((await env.db.selectFrom('tb_voucher_order').select('id').where('voucher_id', '=', voucherId).execute()).length).toBe(STOCK + RAISE),
      60_000,
    );
    await expectSoldOutExactly(env, voucherId, STOCK + RAISE, orderIds, async () => Number(await env.redis.hget(saleKey, 'stock')));
  }, 180_000);
});
