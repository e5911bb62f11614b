import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { homeBucket } from '../../../src/modules/seckill/index.js';
import { startEdge, type Edge } from '../../../kit/edge.js';
import { comparable, UUID_V4, type Answer } from '../../support/edge-answers.js';
import { eventually } from '../../support/eventually.js';
import { HOUR } from '../../support/seckill.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, metricsAuth, sessionOf, type TestEnv } from '../../support/test-env.js';

/**
 * The sale's known refusals at the edge (edge/lua/hmdp/edge/sale_*.lua) in front of a real app
 * instance, on the shared Redis and MariaDB: a refusal the edge gives is the app's own answer
 * byte for byte, it refuses only what the sale's state decides for every buyer, passes everything
 * else to the app, and after a change that reopens a sale (a raise, a resume, a window moved) it
 * refuses nothing once its freshness bound has passed.
 */
let env: TestEnv;
let app: FastifyInstance;
let appUrl: string;
let edge: Edge;
let admin: { authorization: string };
let users: Array<{ id: string; token: string }>;
let nextUser = 0;

const FRESH_MS = 50;
const B = 3;

beforeAll(async () => {
  env = await createTestEnv({ HMDP_COMPAT: 'true', DEFAULT_LANGUAGE: 'zh', SECKILL_MAX_BUCKETS: '8' });
  await env.db.insertInto('tb_shop').values({ id: '1', name: 'shop', type_id: '1', address: 'road 1', x: 120.15, y: 30.33 }).execute();
  ({ app } = await buildTestApp(env));
  appUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  edge = await startEdge(env.config, { salePool: [appUrl.replace('http://', '')], reads: { saleFreshMs: FRESH_MS } });
  admin = await sessionOf(env, '999001', 'admin');
  users = await createUsersWithSessions(env, 60, 16_000_000_000);
  await eventually(async () => expect((await edgeStatus()).sales).toBe('fresh'));
}, 60_000);

afterAll(async () => {
  await edge?.stop();
  await app?.close();
  await env?.cleanup();
});

async function edgeStatus(): Promise<{ sales: string }> {
  return (await fetch(`${edge.url}/_edge/status`)).json() as Promise<{ sales: string }>;
}

/** Order requests the app answered, by its own metrics. */
async function appOrders(): Promise<number> {
  const text = (await app.inject({ url: '/metrics', headers: metricsAuth })).body;
  return text
    .split('\n')
    .filter((line) => line.startsWith('http_request_duration_seconds_count{') && line.includes('voucher-order/seckill'))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

async function post(base: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  const response = await fetch(`${base}${path}`, { method: 'POST', headers, ...(body === undefined ? {} : { body }) });
  return { status: response.status, body: await response.text(), headers: Object.fromEntries(response.headers) };
}

/**
 * An order through the edge, and whether the app saw it: on /api the edge names the instance it
 * passed a request to (X-Upstream, absent from its own answers); the compat surface's location
 * does not, so there the app's metrics tell.
 */
async function viaEdge(voucherId: string, headers: Record<string, string>, path = `/api/voucher-order/seckill/${voucherId}`, body?: string) {
  const before = path.startsWith('/api/') ? 0 : await appOrders();
  const answer = await post(edge.url, path, headers, body);
  const reachedApp = path.startsWith('/api/') ? answer.headers['x-upstream'] !== undefined : (await appOrders()) !== before;
  return { answer, reachedApp };
}

const user = () => users[nextUser++]!;
const orderPath = (voucherId: string) => `/api/voucher-order/seckill/${voucherId}`;

async function createSale(body: Record<string, unknown>): Promise<string> {
  const response = await app.inject({
    method: 'POST',
    url: '/api/voucher/seckill',
    headers: admin,
    payload: { shopId: '1', title: 'edge sale', payValue: 100, actualValue: 200, ...body },
  });
  expect(response.statusCode, response.body).toBe(200);
  return response.json<{ data: string }>().data;
}

const window = (beginOffsetMs: number, endOffsetMs: number) => ({
  beginTime: new Date(Date.now() + beginOffsetMs).toISOString(),
  endTime: new Date(Date.now() + endOffsetMs).toISOString(),
});

async function control(voucherId: string, action: 'pause' | 'resume'): Promise<void> {
  const response = await app.inject({ method: 'POST', url: `/api/voucher/seckill/${voucherId}/${action}`, headers: admin });
  expect(response.statusCode, response.body).toBe(200);
}

async function patch(voucherId: string, payload: object): Promise<void> {
  const response = await app.inject({ method: 'PATCH', url: `/api/voucher/seckill/${voucherId}`, headers: admin, payload });
  expect(response.statusCode, response.body).toBe(200);
}

/** Orders through the edge until the edge answers one itself; returns that answer. */
async function refusedAtEdge(voucherId: string, headers: Record<string, string>, path = orderPath(voucherId)): Promise<Answer> {
  let refusal: Answer | undefined;
  await eventually(async () => {
    const { answer, reachedApp } = await viaEdge(voucherId, headers, path);
    expect(reachedApp).toBe(false);
    refusal = answer;
  });
  return refusal!;
}

/** A sale of one unit, bought by one user: sold out. */
async function soldOutSale(): Promise<string> {
  const voucherId = await createSale({ stock: 1, ...window(-HOUR, HOUR) });
  const bought = await post(appUrl, orderPath(voucherId), { authorization: user().token });
  expect(JSON.parse(bought.body)).toMatchObject({ success: true });
  return voucherId;
}

describe("the edge: the sale's known refusals", () => {
  it("refuses a sold-out sale itself, with the app's answer byte for byte, in both languages and on both surfaces", async () => {
    const voucherId = await soldOutSale();
    for (const language of ['en', 'zh-CN,zh;q=0.9', undefined]) {
      const headers = { authorization: user().token, ...(language ? { 'accept-language': language } : {}) };
      const atEdge = await refusedAtEdge(voucherId, headers);
      const atApp = await post(appUrl, orderPath(voucherId), headers);
      expect(comparable(atEdge)).toEqual(comparable(atApp));
      expect(JSON.parse(atEdge.body)).toMatchObject({ success: false });
    }
    const compat = { authorization: `Bearer ${user().token}`, 'accept-language': 'en' };
    const atEdge = await refusedAtEdge(voucherId, compat, `/voucher-order/seckill/${voucherId}`);
    const atApp = await post(appUrl, `/voucher-order/seckill/${voucherId}`, compat);
    expect(comparable(atEdge)).toEqual(comparable(atApp));
    expect(JSON.parse(atEdge.body)).toEqual({ success: false, errorMsg: 'Sold out' });
    // x-request-id by the app's rule: a new UUID, or the caller's own when it looks sane.
    expect(atEdge.headers['x-request-id']).toMatch(UUID_V4);
    const traced = await refusedAtEdge(voucherId, { ...compat, 'x-request-id': 'trace-42.a:b_c' }, `/voucher-order/seckill/${voucherId}`);
    expect(traced.headers['x-request-id']).toBe('trace-42.a:b_c');
    const insane = await refusedAtEdge(voucherId, { ...compat, 'x-request-id': 'a b' }, `/voucher-order/seckill/${voucherId}`);
    expect(insane.headers['x-request-id']).toMatch(UUID_V4);
  });

  it('refuses a sale not started, ended or paused as the app does', async () => {
    const later = await createSale({ stock: 5, ...window(HOUR, 2 * HOUR) });
    // A sale is created to end in the future: this one ends in a second and a half.
    const ended = await createSale({ stock: 5, ...window(-HOUR, 1_500) });
    await new Promise((resolve) => setTimeout(resolve, 1_700));
    const paused = await createSale({ stock: 5, ...window(-HOUR, HOUR) });
    await control(paused, 'pause');
    for (const [voucherId, message] of [
      [later, 'The sale has not started yet'],
      [ended, 'The sale has ended'],
      [paused, 'The sale is paused by the organiser, please retry later'],
    ] as const) {
      const headers = { authorization: user().token, 'accept-language': 'en' };
      const atEdge = await refusedAtEdge(voucherId, headers);
      const atApp = await post(appUrl, orderPath(voucherId), headers);
      expect(comparable(atEdge)).toEqual(comparable(atApp));
      expect(JSON.parse(atEdge.body)).toEqual({ success: false, errorMsg: message });
    }
  });

  it('passes to the app what the sale alone does not decide, and never accepts an order', async () => {
    const soldOut = await soldOutSale();
    const token = user().token;
    await refusedAtEdge(soldOut, { authorization: token });
    // The token read as the app reads it: raw or after "Bearer ", whitespace around it ignored.
    await refusedAtEdge(soldOut, { authorization: `Bearer \t ${token}` });
    // Without a token: the app's 401. With an Idempotency-Key: reserve.lua's replay. With a body or a query: the app's parser.
    const passed = [
      await viaEdge(soldOut, {}),
      await viaEdge(soldOut, { authorization: token, 'idempotency-key': 'k-1' }),
      await viaEdge(soldOut, { authorization: token, 'content-type': 'application/json' }, orderPath(soldOut), '{}'),
      await viaEdge(soldOut, { authorization: token }, `${orderPath(soldOut)}?x=1`),
      await viaEdge(soldOut, { authorization: 'not a token' }),
      await viaEdge(soldOut, { authorization: 'a'.repeat(15) }),
      await viaEdge(soldOut, { authorization: `${token}.` }),
      await viaEdge(soldOut, { authorization: `bearer ${token}` }),
      await viaEdge('999999999', { authorization: token }),
    ];
    for (const { reachedApp } of passed) expect(reachedApp).toBe(true);
    expect(passed[0]!.answer.status).toBe(401);
    expect(passed.slice(4, 8).map(({ answer }) => answer.status)).toEqual([401, 401, 401, 401]);
    expect(passed[8]!.answer.status).toBe(404);
    // An open sale's orders all reach the app, which accepts them.
    const open = await createSale({ stock: 5, ...window(-HOUR, HOUR) });
    for (let i = 0; i < 5; i += 1) {
      const { answer, reachedApp } = await viaEdge(open, { authorization: user().token });
      expect(reachedApp).toBe(true);
      expect(JSON.parse(answer.body)).toMatchObject({ success: true });
    }
  });

  it('refuses nothing the app would accept once the bound has passed after a raise, a resume or a moved window', async () => {
    const soldOut = await soldOutSale();
    await refusedAtEdge(soldOut, { authorization: user().token });
    await patch(soldOut, { stock: 2 });
    await expectAcceptedAfterBound(soldOut);

    const paused = await createSale({ stock: 5, ...window(-HOUR, HOUR) });
    await control(paused, 'pause');
    await refusedAtEdge(paused, { authorization: user().token });
    await control(paused, 'resume');
    await expectAcceptedAfterBound(paused);

    const later = await createSale({ stock: 5, ...window(HOUR, 2 * HOUR) });
    await refusedAtEdge(later, { authorization: user().token });
    await patch(later, window(-HOUR, HOUR));
    await expectAcceptedAfterBound(later);
  });

  it('refuses a bucketed sale only when no bucket and no refill holds a unit', async () => {
    const voucherId = await createSale({ stock: B, buckets: B, ...window(-HOUR, HOUR) });
    // Two of the three units sold, from buckets 0 and 1: bucket 2 still holds one.
    for (const bucket of [0, 1]) {
      const buyer = users.slice(nextUser).find((candidate) => homeBucket(candidate.id, B) === bucket)!;
      users.splice(users.indexOf(buyer), 1);
      expect(JSON.parse((await post(appUrl, orderPath(voucherId), { authorization: buyer.token })).body)).toMatchObject({ success: true });
    }
    // Never refused at the edge while a unit is left: its orders reach the app (and the last unit sells).
    const probe = user();
    await new Promise((resolve) => setTimeout(resolve, 4 * FRESH_MS));
    const last = await viaEdge(voucherId, { authorization: probe.token });
    expect(last.reachedApp).toBe(true);
    expect(JSON.parse(last.answer.body)).toMatchObject({ success: true });
    const atEdge = await refusedAtEdge(voucherId, { authorization: user().token, 'accept-language': 'en' });
    expect(JSON.parse(atEdge.body)).toEqual({ success: false, errorMsg: 'Sold out' });
    await patch(voucherId, { stock: B + 3 });
    await expectAcceptedAfterBound(voucherId);
  });

  it("answers a shop's voucher list with each sale's live stock, as the app does, and passes it on while a stock is not known", async () => {
    await env.db.insertInto('tb_shop').values({ id: '2', name: 'shop 2', type_id: '1', address: 'road 2', x: 120.15, y: 30.33 }).execute();
    const plain = await app.inject({
      method: 'POST',
      url: '/api/voucher',
      headers: admin,
      payload: { shopId: '2', title: 'plain', payValue: 100, actualValue: 200 },
    });
    expect(plain.statusCode, plain.body).toBe(200);
    const single = await createSale({ shopId: '2', stock: 7, ...window(-HOUR, HOUR) });
    const bucketed = await createSale({ shopId: '2', stock: 6, buckets: B, ...window(-HOUR, HOUR) });
    const list = async (path: string) => {
      const atEdge = await fetch(`${edge.url}${path}`);
      const edgeAnswer = { status: atEdge.status, body: await atEdge.text(), headers: Object.fromEntries(atEdge.headers) };
      const atApp = await fetch(`${appUrl}${path}`);
      return { atEdge: edgeAnswer, atApp: { status: atApp.status, body: await atApp.text(), headers: Object.fromEntries(atApp.headers) } };
    };
    const answeredAtEdge = async (stocks: Record<string, number>) => {
      await eventually(async () => {
        const { atEdge, atApp } = await list('/api/voucher/list/2');
        expect(atEdge.headers['x-upstream']).toBeUndefined();
        expect(comparable(atEdge)).toEqual(comparable(atApp));
        const listed = JSON.parse(atEdge.body).data as Array<{ id: string; stock?: number }>;
        expect(Object.fromEntries(listed.filter((voucher) => voucher.stock !== undefined).map((voucher) => [voucher.id, voucher.stock]))).toEqual(stocks);
      });
    };
    await answeredAtEdge({ [single]: 7, [bucketed]: 6 });
    // Units sold: the cached list keeps MySQL's stock, the answers the sales' live stock.
    for (const voucherId of [single, bucketed]) {
      expect(JSON.parse((await post(appUrl, orderPath(voucherId), { authorization: user().token })).body)).toMatchObject({ success: true });
    }
    await answeredAtEdge({ [single]: 6, [bucketed]: 5 });
    // A sale created through the app: its list's record is written and announced, L1 drops its entry
    // (it would live 30 s otherwise), and the edge lists the new sale.
    const added = await createSale({ shopId: '2', stock: 3, ...window(HOUR, 2 * HOUR) });
    await answeredAtEdge({ [single]: 6, [bucketed]: 5, [added]: 3 });
    // A shop without vouchers: the app's [] from its null marker.
    await eventually(async () => {
      const { atEdge, atApp } = await list('/voucher/list/999');
      expect(comparable(atEdge)).toEqual(comparable(atApp));
      expect(JSON.parse(atEdge.body)).toEqual({ success: true, data: [] });
    });
  });
});

/** After a change the app has answered: once the bound has passed, an order through the edge reaches the app and is accepted. */
async function expectAcceptedAfterBound(voucherId: string): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, FRESH_MS + 20));
  const { answer, reachedApp } = await viaEdge(voucherId, { authorization: user().token });
  expect(reachedApp).toBe(true);
  expect(JSON.parse(answer.body)).toMatchObject({ success: true });
}
