import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSale, type Sale } from '../../../../src/modules/seckill/sale/sale.js';
import { SaleKeys } from '../../../../src/modules/seckill/keys.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, grantAdmin, type TestEnv } from '../../../support/test-env.js';

let env: TestEnv;
let app: FastifyInstance;
let admin: { authorization: string };
let user: { authorization: string };
let sale: Sale;

const HOUR = 3600_000;
const iso = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString();

beforeAll(async () => {
  env = await createTestEnv();
  await env.db.insertInto('tb_shop').values({ id: '7', name: '103茶餐厅', type_id: '1', address: '台州路1号', x: 120.15, y: 30.33 }).execute();
  const [first, second] = await createUsersWithSessions(env, 2);
  await grantAdmin(env, '15000000000'); // the first user's phone
  admin = { authorization: first!.token };
  user = { authorization: second!.token };
  ({ app } = await buildTestApp(env));
  sale = buildSale(env.redis, new SaleKeys(env.config.seckill.streamShards));
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

const normal = { shopId: '7', title: '50元代金券', subTitle: '周一至周日可用', rules: '不找零', payValue: 4750, actualValue: 5000 };
const seckill = (overrides: Record<string, unknown> = {}) => ({
  ...normal,
  title: '100元秒杀券',
  payValue: 8000,
  actualValue: 10000,
  stock: 20,
  beginTime: iso(-HOUR),
  endTime: iso(HOUR),
  ...overrides,
});

function post(url: string, payload: object, headers = admin) {
  return app.inject({ method: 'POST', url, payload, headers });
}

describe('vouchers', () => {
  it('an admin adds a normal voucher and a seckill voucher; the list shows stock and window', async () => {
    const normalId = (await post('/api/voucher', normal)).json().data;
    const body = seckill({ beginTime: '2026-01-01T10:00:00+08:00', endTime: '2099-01-01T00:00:00Z' });
    const created = await post('/api/voucher/seckill', body);
    expect(created.statusCode).toBe(200);
    const seckillId = created.json().data;
    expect(seckillId).toMatch(/^\d+$/);

    const list = await app.inject({ url: '/api/voucher/list/7' });
    expect(list.json().data).toEqual([
      { id: normalId, shopId: '7', title: '50元代金券', subTitle: '周一至周日可用', rules: '不找零', payValue: 4750, actualValue: 5000, type: 0, status: 1 },
      {
        id: seckillId,
        shopId: '7',
        title: '100元秒杀券',
        subTitle: '周一至周日可用',
        rules: '不找零',
        payValue: 8000,
        actualValue: 10000,
        type: 1,
        status: 1,
        stock: 20,
        beginTime: '2026-01-01T02:00:00.000Z',
        endTime: '2099-01-01T00:00:00.000Z',
        limitPerUser: 1,
        purchaseGate: 'off',
      },
    ]);
  });

  it('writes tb_voucher and tb_seckill_voucher together and publishes stock and window to Redis', async () => {
    const id = (await post('/api/voucher/seckill', seckill({ stock: 33 }))).json().data as string;
    const row = await env.db.selectFrom('tb_seckill_voucher').selectAll().where('voucher_id', '=', id).executeTakeFirstOrThrow();
    expect(row.stock).toBe(33);
    const live = await sale.reads.read(id);
    expect(live).toEqual({ voucherId: id, stock: 33, begin: row.begin_time, end: row.end_time });
  });

  it('publishes at start the unfinished sales Redis does not know (a failed publish, a lost Redis)', async () => {
    const id = (await post('/api/voucher/seckill', seckill({ stock: 5 }))).json().data as string;
    await env.redis.del(sale.keys.voucher(id).voucher);
    const { app: restarted } = await buildTestApp(env);
    try {
      expect((await sale.reads.read(id))?.stock).toBe(5);
    } finally {
      await restarted.close();
    }
  });

  it('refuses writes from users who are not admins (403) and from anonymous ones (401)', async () => {
    expect((await post('/api/voucher', normal, user)).statusCode).toBe(403);
    expect((await post('/api/voucher/seckill', seckill(), user)).json()).toEqual({ success: false, errorMsg: 'Only administrators may do this' });
    expect((await app.inject({ method: 'POST', url: '/api/voucher', payload: normal })).statusCode).toBe(401);
  });

  it.each([
    ['negative stock', { stock: -1 }, 'body.stock must be a whole number from 0'],
    ['end before begin', { beginTime: iso(2 * HOUR), endTime: iso(HOUR) }, 'body.endTime must be after body.beginTime'],
    ['end equal to begin', { beginTime: '2099-01-01T00:00:00Z', endTime: '2099-01-01T00:00:00Z' }, 'must be after'],
    ['already over', { beginTime: iso(-2 * HOUR), endTime: iso(-HOUR) }, 'body.endTime must be in the future'],
    ['time without zone', { beginTime: '2099-01-01T00:00:00' }, 'body.beginTime must be an RFC 3339 date-time'],
    ['unknown shop', { shopId: '999' }, 'body.shopId: shop 999 does not exist'],
    ['pay more than worth', { payValue: 20000 }, 'body.payValue must not exceed body.actualValue'],
    ['fractional money', { payValue: 10.5 }, 'body.payValue must be a whole number of fen'],
  ])('answers 400 for %s', async (_case, overrides, message) => {
    const response = await post('/api/voucher/seckill', seckill(overrides));
    expect(response.statusCode).toBe(400);
    expect(response.json().errorMsg).toContain(message);
  });

  it('lists nothing for a shop without vouchers and 400 for a bad shop id', async () => {
    expect((await app.inject({ url: '/api/voucher/list/12345' })).json()).toEqual({ success: true, data: [] });
    expect((await app.inject({ url: '/api/voucher/list/x' })).statusCode).toBe(400);
  });
});

describe('fields at creation (issue 40, item 2): a field is used, agrees with what the server sets, or is refused', () => {
  const countVouchers = async () =>
    Number(
      (
        await env.db
          .selectFrom('tb_voucher')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const VOUCHER_FIELDS = 'shopId, title, subTitle, rules, payValue, actualValue';
  const HMDP_FIELDS = 'id, type, status, createTime, updateTime';
  const SALE_FIELDS = `${VOUCHER_FIELDS}, stock, beginTime, endTime, limitPerUser, purchaseGate, captchaMaxNumber, buckets, ${HMDP_FIELDS}`;

  it("refuses the probe's misspelt settings with 400 naming both and listing the fields, and creates nothing", async () => {
    const before = await countVouchers();
    const response = await post('/api/voucher/seckill', { ...seckill(), limitperuser: 5, purchasegate: 'captcha' });
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json()).toEqual({
      success: false,
      errorMsg: `body.limitperuser and body.purchasegate are not fields of this body; its fields are ${SALE_FIELDS}`,
    });
    expect(await countVouchers()).toBe(before);
  });

  it('names one unknown field alone, on the plain voucher route too, in both languages', async () => {
    const plain = await post('/api/voucher', { ...normal, subtitle: 'typo' });
    expect(plain.json()).toEqual({ success: false, errorMsg: `body.subtitle is not a field of this body; its fields are ${VOUCHER_FIELDS}, ${HMDP_FIELDS}` });
    const zh = await app.inject({
      method: 'POST',
      url: '/api/voucher/seckill',
      payload: { ...seckill(), Stock: 5 },
      headers: { ...admin, 'accept-language': 'zh' },
    });
    expect(zh.json()).toEqual({ success: false, errorMsg: `参数 body 不允许有字段 Stock；可用的字段：${SALE_FIELDS}` });
  });

  it('names five unknown fields at most, each cut to 40 characters: a hostile body is not echoed whole', async () => {
    const junk = Object.fromEntries(Array.from({ length: 400 }, (_, index) => [`${'x'.repeat(100)}${index}`, 1]));
    const response = await post('/api/voucher', { ...normal, ...junk });
    const cut = `body.${'x'.repeat(40)}…`;
    expect(response.json()).toEqual({
      success: false,
      errorMsg: `${[cut, cut, cut, cut, cut].join(', ')} and 395 more are not fields of this body; its fields are ${VOUCHER_FIELDS}, ${HMDP_FIELDS}`,
    });
  });

  it("accepts the course's body (type 1) and hmdp's entity fields the server sets, when they agree with it", async () => {
    const hmdpBody = { ...seckill(), type: 1, status: 1, id: null, createTime: null, updateTime: null };
    const created = await post('/api/voucher/seckill', hmdpBody);
    expect(created.statusCode, created.body).toBe(200);
    const plain = await post('/api/voucher', { ...normal, type: 0, status: null });
    expect(plain.statusCode, plain.body).toBe(200);
  });

  it('names a field once in the range message of its schema (issue 40, item 7a: "body.buckets body.buckets must be…")', async () => {
    const en = await post('/api/voucher/seckill', seckill({ buckets: 9 }));
    expect(en.json()).toEqual({ success: false, errorMsg: 'body.buckets must be a whole number from 1 to 8' });
    const zh = await app.inject({
      method: 'POST',
      url: '/api/voucher/seckill',
      payload: seckill({ buckets: 0 }),
      headers: { ...admin, 'accept-language': 'zh' },
    });
    expect(zh.json()).toEqual({ success: false, errorMsg: '应为 1 到 8 之间的整数（body.buckets）' });
  });

  it.each([
    [
      'a plain type on the seckill route',
      '/api/voucher/seckill',
      { type: 0 },
      'body.type must be 1 here: the route decides the type (0 POST /api/voucher, 1 POST /api/voucher/seckill)',
    ],
    [
      'a seckill type on the plain route',
      '/api/voucher',
      { type: 1 },
      'body.type must be 0 here: the route decides the type (0 POST /api/voucher, 1 POST /api/voucher/seckill)',
    ],
    ['an id', '/api/voucher/seckill', { id: 5 }, 'body.id is set by the server: leave it out (or null)'],
    ['a creation time', '/api/voucher', { createTime: '2020-01-01T00:00:00Z' }, 'body.createTime is set by the server: leave it out (or null)'],
    ['an off-shelf status', '/api/voucher/seckill', { status: 2 }, 'body.status must be 1 (on sale, as every new voucher is) or null'],
  ])('refuses %s that the server would not keep', async (_case, url, fields, message) => {
    const response = await post(url, { ...(url === '/api/voucher' ? normal : seckill()), ...fields });
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json().errorMsg).toBe(message);
  });
});
