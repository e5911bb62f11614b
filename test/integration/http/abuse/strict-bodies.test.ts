import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, createTestEnv, createUsersWithSessions, grantAdmin, type TestEnv } from '../../../support/test-env.js';

/**
 * JSON bodies are taken as typed (issue #17, items 5 and 7): no coercion, ids that a JavaScript
 * number cannot hold exactly are refused, and instants that do not parse are refused, each with
 * 400 naming the field. Query strings are still coerced (they are text).
 */

let env: TestEnv;
let app: FastifyInstance;
let admin: { authorization: string };
let shopId: string;
let typeId: string;

const hour = 3_600_000;

beforeAll(async () => {
  env = await createTestEnv();
  const phone = 15_910_000_000;
  const [user] = await createUsersWithSessions(env, 1, phone);
  await grantAdmin(env, String(phone));
  admin = { authorization: user!.token };
  ({ app } = await buildTestApp(env));
  await env.db.insertInto('tb_shop_type').values({ name: 'food' }).execute();
  typeId = (await env.db.selectFrom('tb_shop_type').select('id').executeTakeFirstOrThrow()).id;
  const created = await app.inject({
    method: 'POST',
    url: '/api/shop',
    headers: admin,
    payload: { name: 'Noodles', typeId, address: 'West Lake 1', x: 120.15, y: 30.28 },
  });
  shopId = created.json<{ data: string }>().data;
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

/** Posts a JSON text as it is (numbers beyond 2^53 must reach the server unrounded). */
const postJson = (url: string, json: string) => app.inject({ method: 'POST', url, headers: { ...admin, 'content-type': 'application/json' }, payload: json });

const voucher = (fields: Record<string, string>): string => {
  const base: Record<string, string> = {
    shopId: JSON.stringify(shopId),
    title: '"50 off"',
    payValue: '100',
    actualValue: '200',
    stock: '10',
    beginTime: JSON.stringify(new Date(Date.now() - hour).toISOString()),
    endTime: JSON.stringify(new Date(Date.now() + hour).toISOString()),
  };
  return `{${Object.entries({ ...base, ...fields })
    .map(([key, value]) => `"${key}":${value}`)
    .join(',')}}`;
};

describe('instants in JSON bodies', () => {
  it.each([
    ['a leap second', '"2030-06-30T23:59:60Z"'],
    ['year 10000 once in UTC', '"9999-12-31T23:00:00-05:00"'],
    ['a time before 1970', '"1969-12-31T23:59:59Z"'],
    ['no offset', '"2030-06-30T10:00:00"'],
    ['February 30', '"2030-02-30T10:00:00Z"'],
    ['a number', '1909094400000'],
  ])('refuses %s with 400 naming the field', async (_name, endTime) => {
    const response = await postJson('/api/voucher/seckill', voucher({ endTime }));
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json()).toEqual({ success: false, errorMsg: expect.stringMatching(/^body\.endTime must be an RFC 3339 date-time/) });
  });

  it('accepts an instant with an offset', async () => {
    const response = await postJson('/api/voucher/seckill', voucher({ endTime: '"2030-06-30T23:59:59+08:00"' }));
    expect(response.statusCode, response.body).toBe(200);
  });
});

describe('ids and types in JSON bodies', () => {
  it.each([
    ['beyond 2^53 (9007199254740993 reads as …992)', '9007199254740993'],
    ['2^53 itself', '9007199254740992'],
    ['a fraction', '1.5'],
    ['zero', '0'],
    ['negative', '-1'],
    ['an array holding the id', '["1"]'],
    ['an object', '{"id":"1"}'],
    ['a boolean', 'true'],
  ])('refuses a shopId that is %s with 400 naming the field', async (_name, value) => {
    const response = await postJson('/api/voucher', voucher({ shopId: value }));
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json<{ errorMsg: string }>().errorMsg).toMatch(/^body\.shopId must be a positive integer id/);
  });

  it('accepts a safe-integer number (as hmdp sends it) and a string of digits, storing the same id', async () => {
    const asNumber = await postJson('/api/voucher', voucher({ shopId: shopId }));
    expect(asNumber.statusCode, asNumber.body).toBe(200);
    const asString = await postJson('/api/voucher', voucher({ shopId: JSON.stringify(shopId) }));
    expect(asString.statusCode, asString.body).toBe(200);
    const listed = (await app.inject({ url: `/api/voucher/list/${shopId}` })).json<{ data: Array<{ id: string; shopId: string }> }>().data;
    const ids = [asNumber, asString].map((response) => response.json<{ data: string }>().data);
    expect(listed.filter((item) => ids.includes(item.id)).map((item) => item.shopId)).toEqual([shopId, shopId]);
  });

  it('coerces nothing: a number for a text, a text for a number, an array for a scalar are 400', async () => {
    const cases: Array<[string, string]> = [
      ['title', '123'],
      ['title', '["50 off"]'],
      ['payValue', '"100"'],
      ['stock', '["10"]'],
      ['stock', 'null'],
    ];
    for (const [field, value] of cases) {
      const response = await postJson('/api/voucher/seckill', voucher({ [field]: value }));
      expect(response.statusCode, `${field}=${value}: ${response.body}`).toBe(400);
      expect(response.json<{ errorMsg: string }>().errorMsg).toMatch(new RegExp(`^body\\.${field} `));
    }
  });

  it('also refuses unsafe ids in the other bodies that carry ids (shop typeId, shop id, blog shopId)', async () => {
    const shop = await postJson('/api/shop', `{"name":"N","typeId":9007199254740993,"address":"A","x":120.1,"y":30.2}`);
    expect(shop.json<{ errorMsg: string }>().errorMsg).toMatch(/^body\.typeId must be a positive integer id/);
    const update = await app.inject({
      method: 'PUT',
      url: '/api/shop',
      headers: { ...admin, 'content-type': 'application/json' },
      payload: '{"id":18014398509481985,"name":"N"}',
    });
    expect(update.json<{ errorMsg: string }>().errorMsg).toMatch(/^body\.id must be a positive integer id/);
    const blog = await postJson('/api/blog', `{"shopId":9007199254740993,"title":"t","content":"c"}`);
    expect(blog.json<{ errorMsg: string }>().errorMsg).toMatch(/^body\.shopId must be a positive integer id/);
    expect([shop.statusCode, update.statusCode, blog.statusCode]).toEqual([400, 400, 400]);
  });

  it('still coerces query strings and params (they are text)', async () => {
    const response = await app.inject({ url: `/api/shop/of/type?typeId=${typeId}&current=1&x=120.15&y=30.28` });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json<{ data: Array<{ id: string }> }>().data.map((shop) => shop.id)).toContain(shopId);
  });
});
