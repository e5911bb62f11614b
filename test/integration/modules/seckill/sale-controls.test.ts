import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REFUSALS } from '../../../../src/modules/seckill/messages.js';
import { reconcileSeckill } from '../../../../src/modules/seckill/admin/reconcile.js';
import { buildSale, type Sale } from '../../../../src/modules/seckill/sale/sale.js';
import { SALE_BUSY, withSaleLock } from '../../../../src/modules/seckill/admin/sale-controls.js';
import { SaleKeys } from '../../../../src/modules/seckill/keys.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, sessionOf, type TestEnv } from '../../../support/test-env.js';
import { buy, insertSeckillVoucher, mysqlOrders, mysqlStock } from '../../../support/seckill.js';
import { eventually } from '../../../support/eventually.js';

let env: TestEnv;
let instances: FastifyInstance[];
let users: Array<{ id: string; token: string }>;
let admin: { authorization: string };
let sale: Sale;

beforeAll(async () => {
  env = await createTestEnv({ SECKILL_STRATEGY: 'async', SECKILL_WORKER: 'true', SECKILL_STREAM_SHARDS: '2' });
  users = await createUsersWithSessions(env, 400);
  admin = await sessionOf(env, '999001', 'admin');
  // Two instances with a worker each: a control on one must hold for orders on the other.
  instances = [];
  for (const consumerName of ['controls-a', 'controls-b']) instances.push((await buildTestApp(env, undefined, { consumerName })).app);
  sale = buildSale(env.redis, new SaleKeys(env.config.seckill.streamShards));
});

afterAll(async () => {
  for (const app of instances ?? []) await app.close();
  await env?.cleanup();
});

const app = () => instances[0]!;
const control = (voucherId: string, action: 'pause' | 'resume', headers = admin, on = app()) =>
  on.inject({ method: 'POST', url: `/api/voucher/seckill/${voucherId}/${action}`, headers });
const patch = (voucherId: string, payload: object, headers = admin, on = app()) =>
  on.inject({ method: 'PATCH', url: `/api/voucher/seckill/${voucherId}`, headers, payload });
const audit = async (voucherId: string) => (await app().inject({ url: `/api/voucher/seckill/${voucherId}/audit`, headers: admin })).json();
const redisStock = async (voucherId: string) => (await sale.reads.read(voucherId))?.stock;
const drained = async (voucherId: string, count: number) => eventually(async () => expect(await mysqlOrders(env, voucherId)).toHaveLength(count));

/** Every sale check: distinct buyers, MySQL orders = accepted ids, stocks agree, reconcile finds nothing. */
async function expectConsistent(voucherId: string, accepted: string[], total: number) {
  await drained(voucherId, accepted.length);
  const orders = await mysqlOrders(env, voucherId);
  expect(new Set(orders.map((order) => order.id))).toEqual(new Set(accepted));
  expect(new Set(orders.map((order) => order.user_id)).size).toBe(orders.length);
  expect(orders.length).toBeLessThanOrEqual(total);
  expect(await mysqlStock(env, voucherId)).toBe(total - orders.length);
  expect(await redisStock(voucherId)).toBe(total - orders.length);
  const report = await reconcileSeckill({ db: env.db, sale }, { repair: false, voucherIds: [voucherId] });
  expect(report.drifted).toEqual([]);
  const dead = await env.redis.xlen(sale.keys.voucher(voucherId).deadLetters);
  expect(dead).toBe(0);
}

describe('live sale controls', () => {
  it('pause refuses every order on every instance until resume; a repeat is a no-op recorded once', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 10 });
    expect((await buy(app(), users[0]!.token, voucherId)).json().success).toBe(true);

    const paused = await control(voucherId, 'pause');
    expect(paused.json()).toMatchObject({ success: true, data: { voucherId, paused: true, stock: 10, left: 9, changed: true } });
    expect((await control(voucherId, 'pause', admin, instances[1])).json().data.changed).toBe(false);
    for (const on of instances) expect((await buy(on, users[1]!.token, voucherId)).json()).toMatchObject({ success: false, errorMsg: REFUSALS.suspended });

    // Redis lost the sale: republished from MySQL, it is still paused.
    await env.redis.del(sale.keys.voucher(voucherId).voucher);
    expect((await buy(app(), users[1]!.token, voucherId)).json().errorMsg).toBe(REFUSALS.suspended);

    expect((await control(voucherId, 'resume', admin, instances[1])).json().data).toMatchObject({ paused: false, changed: true });
    expect((await buy(instances[1]!, users[1]!.token, voucherId)).json().success).toBe(true);

    const entries = await audit(voucherId);
    expect(entries.total).toBe(2);
    expect(entries.data.map((entry: { action: string }) => entry.action)).toEqual(['resume', 'pause']);
    expect(entries.data[1]).toMatchObject({ adminId: '999001', before: { paused: false, stock: 10 }, after: { paused: true, stock: 10 } });
    expect(Date.parse(entries.data[1].time)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('only administrators steer a sale or read its audit', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 1 });
    const user = { authorization: users[2]!.token };
    expect((await control(voucherId, 'pause', user)).statusCode).toBe(403);
    expect((await patch(voucherId, { stock: 5 }, user)).statusCode).toBe(403);
    expect((await app().inject({ url: `/api/voucher/seckill/${voucherId}/audit`, headers: user })).statusCode).toBe(403);
    expect((await control('987654321', 'pause')).statusCode).toBe(404);
  });

  it('stock is the total offered: raised, lowered to what is sold but not below (400), repeated without effect', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 3 });
    const accepted: string[] = [];
    for (const user of users.slice(10, 13)) accepted.push((await buy(app(), user.token, voucherId)).json().data);
    expect((await buy(app(), users[13]!.token, voucherId)).json().errorMsg).toBe(REFUSALS.soldOut);

    const raised = (await patch(voucherId, { stock: 5 })).json();
    expect(raised.data).toMatchObject({ stock: 5, left: 2, changed: true });
    expect((await patch(voucherId, { stock: 5 }, admin, instances[1])).json().data).toMatchObject({ stock: 5, left: 2, changed: false });
    accepted.push((await buy(instances[1]!, users[13]!.token, voucherId)).json().data);

    const below = await patch(voucherId, { stock: 3 });
    expect(below.statusCode).toBe(400);
    expect(below.json().errorMsg).toMatch(/4 units are sold or queued/);
    expect((await patch(voucherId, { stock: 4 })).json().data).toMatchObject({ stock: 4, left: 0, changed: true });
    expect((await buy(app(), users[14]!.token, voucherId)).json().errorMsg).toBe(REFUSALS.soldOut);

    await expectConsistent(voucherId, accepted, 4);
    expect((await audit(voucherId)).data.map((entry: { after: { stock: number } }) => entry.after.stock)).toEqual([4, 5]);
  });

  it('a change cut between its two writes converges on a retry (Redis lost the raise)', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 2 });
    const orderId = (await buy(app(), users[20]!.token, voucherId)).json().data as string;
    expect((await patch(voucherId, { stock: 6 })).json().data.left).toBe(5);
    // As if the instance died after MySQL's write: Redis still has the old total.
    const key = sale.keys.voucher(voucherId).voucher;
    await env.redis.hset(key, 'stock', 1, 'total', 2);
    expect((await patch(voucherId, { stock: 6 })).json().data).toMatchObject({ changed: false, left: 5 });
    await expectConsistent(voucherId, [orderId], 6);
  });

  it('after a reconciliation repair the controls count sold units from MySQL again', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 4 });
    const accepted = [(await buy(app(), users[36]!.token, voucherId)).json().data, (await buy(app(), users[37]!.token, voucherId)).json().data];
    expect((await patch(voucherId, { stock: 6 })).json().data.left).toBe(4);
    await drained(voucherId, 2);
    // A failover lost the raise in Redis; the repair puts the stock back from MySQL.
    await env.redis.hset(sale.keys.voucher(voucherId).voucher, 'stock', 2, 'total', 4);
    const repaired = await reconcileSeckill({ db: env.db, sale }, { repair: true, voucherIds: [voucherId] });
    expect(repaired.repaired).toBe(1);
    const below = await patch(voucherId, { stock: 1 });
    expect(below.statusCode).toBe(400);
    expect(below.json().errorMsg).toMatch(/2 units are sold or queued/);
    await expectConsistent(voucherId, accepted, 6);
  });

  it('a reconciliation repair and an administrator change of one sale never interleave', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 4 });
    expect((await buy(app(), users[38]!.token, voucherId)).json().success).toBe(true);
    await drained(voucherId, 1);
    // Drifted: a sale with an order is missing from Redis (its buyer could buy again).
    await env.redis.del(sale.keys.voucher(voucherId).voucher, sale.keys.voucher(voucherId).buyers);
    const report = await withSaleLock(env.db, voucherId, async () => {
      // Held here (as by a change on another instance): the repair steps aside, and so does a second change.
      expect((await patch(voucherId, { stock: 6 })).statusCode).toBe(409);
      return reconcileSeckill({ db: env.db, sale }, { repair: true, voucherIds: [voucherId] });
    });
    expect(report).not.toBe(SALE_BUSY);
    expect(report === SALE_BUSY ? null : report.skipped).toEqual([{ voucherId, reason: 'an administrator is changing this sale; run it again' }]);
    expect((await reconcileSeckill({ db: env.db, sale }, { repair: true, voucherIds: [voucherId] })).repaired).toBe(1);
    expect((await patch(voucherId, { stock: 6 })).json().data).toMatchObject({ stock: 6, left: 5 });
  });

  it('the window moves and ends now; bad changes get a 400', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 5 });
    const later = new Date(Date.now() + 3_600_000).toISOString();
    expect((await patch(voucherId, { beginTime: later, endTime: new Date(Date.now() + 7_200_000).toISOString() })).json().success).toBe(true);
    expect((await buy(app(), users[30]!.token, voucherId)).json().errorMsg).toBe(REFUSALS.notStarted);
    expect((await patch(voucherId, { beginTime: new Date(Date.now() - 60_000).toISOString() })).json().success).toBe(true);
    expect((await buy(app(), users[30]!.token, voucherId)).json().success).toBe(true);

    const ended = (await patch(voucherId, { endTime: new Date().toISOString() })).json().data;
    expect(Date.parse(ended.endTime)).toBeLessThanOrEqual(Date.now());
    expect((await buy(instances[1]!, users[31]!.token, voucherId)).json().errorMsg).toBe(REFUSALS.ended);
    expect((await patch(voucherId, { endTime: new Date().toISOString() })).json().data.changed).toBe(false);
    const row = await env.db.selectFrom('tb_seckill_voucher').select('end_time').where('voucher_id', '=', voucherId).executeTakeFirstOrThrow();
    expect(row.end_time.toISOString()).toBe(ended.endTime);

    expect((await patch(voucherId, {})).statusCode).toBe(400);
    expect((await patch(voucherId, { stock: -1 })).statusCode).toBe(400);
    const beginAfterEnd = await patch(voucherId, { beginTime: later });
    expect(beginAfterEnd.statusCode).toBe(400);
    expect(beginAfterEnd.json().errorMsg).toBe(`body.beginTime must be before the sale's end, ${String(ended.endTime)} (send endTime too to move both)`);
  });

  it('answers each bad or unusual change clearly: ending a sale not begun, one bound past the other, unknown fields, stock out of range', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 5, begin: new Date(Date.now() + 3_600_000), end: new Date(Date.now() + 7_200_000) });
    const zh = (payload: object) =>
      app().inject({ method: 'PATCH', url: `/api/voucher/seckill/${voucherId}`, headers: { ...admin, 'accept-language': 'zh' }, payload });
    const { beginTime, endTime } = (await patch(voucherId, { limitPerUser: 1 })).json().data as { beginTime: string; endTime: string };

    // One bound moved past the other names the field sent and the stored bound it crossed.
    const lateBegin = new Date(Date.parse(endTime) + 60_000).toISOString();
    expect((await patch(voucherId, { beginTime: lateBegin })).json()).toMatchObject({
      success: false,
      errorMsg: `body.beginTime must be before the sale's end, ${endTime} (send endTime too to move both)`,
    });
    expect((await zh({ beginTime: lateBegin })).json().errorMsg).toBe(`body.beginTime 必须早于秒杀的结束时间 ${endTime}（如需同时移动，请一并给出 endTime）`);
    const earlyEnd = new Date(Date.parse(beginTime) - 60_000).toISOString();
    const endBeforeBegin = await patch(voucherId, { endTime: earlyEnd });
    expect(endBeforeBegin.statusCode).toBe(400);
    expect(endBeforeBegin.json().errorMsg).toBe(`body.endTime must be after the sale's begin, ${beginTime} (send beginTime too to move both)`);

    // Unknown fields are refused, naming the field, and change nothing.
    const unknown = await patch(voucherId, { Stock: 50 });
    expect(unknown.statusCode).toBe(400);
    // The settings listed are the schema's own, buckets among them (issue 40, item 7b).
    const settings = 'stock, beginTime, endTime, limitPerUser, purchaseGate, captchaMaxNumber, buckets';
    expect(unknown.json().errorMsg).toBe(`body.Stock is not a field of this body; its fields are ${settings}`);
    expect((await patch(voucherId, { Stock: 50, limitperuser: 2 })).json().errorMsg).toBe(
      `body.Stock and body.limitperuser are not fields of this body; its fields are ${settings}`,
    );
    expect((await zh({ stock: 6, Stock: 50 })).json().errorMsg).toBe(`参数 body 不允许有字段 Stock；可用的字段：${settings}`);
    expect((await patch(voucherId, {})).json().errorMsg).toBe(`body must hold at least one of ${settings}`);
    expect((await audit(voucherId)).total).toBe(0);

    // The stock's range is given whole.
    const tooMuch = await patch(voucherId, { stock: 10_000_001 });
    expect(tooMuch.statusCode).toBe(400);
    expect(tooMuch.json().errorMsg).toBe('body.stock must be a whole number from 0 to 10000000');
    expect((await zh({ stock: 1.5 })).json().errorMsg).toBe('应为 0 到 10000000 之间的整数（body.stock）');

    // "End now" on a sale not begun: it ends (never having opened), the window closed just before now.
    const ended = await patch(voucherId, { endTime: new Date().toISOString() });
    expect(ended.statusCode).toBe(200);
    const window = ended.json().data as { beginTime: string; endTime: string; changed: boolean };
    expect(window.changed).toBe(true);
    expect(Date.parse(window.endTime)).toBeLessThanOrEqual(Date.now());
    expect(Date.parse(window.beginTime)).toBeLessThan(Date.parse(window.endTime));
    expect((await buy(instances[1]!, users[32]!.token, voucherId)).json().errorMsg).toBe(REFUSALS.ended);
    expect((await patch(voucherId, { endTime: new Date().toISOString() })).json().data.changed).toBe(false);
  });

  it('orders from many clients while stock is raised and lowered and the sale paused, resumed and ended: every check holds', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 60 });
    const accepted: string[] = [];
    const refusals = new Set<string>();
    let next = 40;
    let stop = false;
    const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    // A refused user tries again, so only orders use up users and a fast machine can't run out before the raises.
    const client = async (index: number) => {
      let user = users[next++];
      while (!stop && user) {
        const body = (await buy(instances[index % 2]!, user.token, voucherId)).json();
        if (body.success) accepted.push(body.data);
        else refusals.add(body.errorMsg);
        if (body.success || body.errorMsg === REFUSALS.alreadyBought) user = users[next++];
        else await wait(2);
      }
    };
    const clients = Array.from({ length: 8 }, (_, index) => client(index));
    // Lowering by half of what Redis had left a moment ago: orders in between may make it a 400.
    // Sold out already (nothing left in Redis), a lowering asks for the total it has: no change.
    let lowersAsked = 0;
    const lowered = async () => {
      const [left, total] = await env.redis.hmget(sale.keys.voucher(voucherId).voucher, 'stock', 'total');
      const by = Math.ceil(Number(left) / 2);
      if (by > 0) lowersAsked += 1;
      return { stock: Number(total) - by };
    };
    const steps: Array<'pause' | 'resume' | (() => Promise<object>)> = [
      async () => ({ stock: 120 }),
      'pause',
      lowered, // while paused: applied
      'resume',
      async () => ({ stock: 150 }),
      lowered,
      async () => ({ stock: 170 }),
    ];
    const statuses: number[] = [];
    let applied = 0;
    let lowersApplied = 0;
    for (const step of steps) {
      await wait(40);
      const asked = lowersAsked;
      const response = typeof step === 'string' ? await control(voucherId, step, admin, instances[1]) : await patch(voucherId, await step());
      statuses.push(response.statusCode);
      const changed = response.statusCode === 200 && response.json().data.changed === true;
      if (changed) applied += 1;
      if (changed && lowersAsked > asked) lowersApplied += 1;
    }
    expect(statuses.filter((status) => status !== 200 && status !== 400)).toEqual([]);
    expect(applied).toBeGreaterThanOrEqual(5);
    // The raises are for sale: the sale ends once orders pass the first stock (a slow machine takes longer, not fewer).
    for (const deadline = Date.now() + 15_000; accepted.length <= 60 && Date.now() < deadline;) await wait(20);
    expect((await patch(voucherId, { endTime: new Date().toISOString() })).statusCode).toBe(200);
    stop = true;
    await Promise.all(clients);
    expect(accepted.length).toBeGreaterThan(60);
    const allowed = new Set<string>([REFUSALS.soldOut, REFUSALS.suspended, REFUSALS.ended, REFUSALS.alreadyBought]);
    expect([...refusals].filter((message) => !allowed.has(message) && !/Too many/i.test(message))).toEqual([]);
    const total = (await env.db.selectFrom('tb_seckill_voucher').select('total_stock').where('voucher_id', '=', voucherId).executeTakeFirstOrThrow())
      .total_stock!;
    await expectConsistent(voucherId, accepted, total);
    // The audit holds every applied change (and the end), the applied lowerings among them.
    const changes = (await audit(voucherId)).data as Array<{ action: string; before: { stock: number }; after: { stock: number } }>;
    expect(changes).toHaveLength(applied + 1);
    expect(changes.filter((change) => change.after.stock < change.before.stock).length).toBeGreaterThanOrEqual(lowersApplied);
  });
});
