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

/** A seckill voucher's JSON text with `fields` replaced; `plain`: without the sale's fields, for POST /api/voucher. */
const voucher = (fields: Record<string, string>, kind: 'seckill' | 'plain' = 'seckill'): string => {
  const plain: Record<string, string> = { shopId: JSON.stringify(shopId), title: '"50 off"', payValue: '100', actualValue: '200' };
  const sale: Record<string, string> = {
    stock: '10',
    beginTime: JSON.stringify(new Date(Date.now() - hour).toISOString()),
    endTime: JSON.stringify(new Date(Date.now() + hour).toISOString()),
  };
  const base = kind === 'plain' ? plain : { ...plain, ...sale };
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
    const response = await postJson('/api/voucher', voucher({ shopId: value }, 'plain'));
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json<{ errorMsg: string }>().errorMsg).toMatch(/^body\.shopId must be a positive integer id/);
  });

  it('accepts a safe-integer number (as hmdp sends it) and a string of digits, storing the same id', async () => {
    const asNumber = await postJson('/api/voucher', voucher({ shopId: shopId }, 'plain'));
    expect(asNumber.statusCode, asNumber.body).toBe(200);
    const asString = await postJson('/api/voucher', voucher({ shopId: JSON.stringify(shopId) }, 'plain'));
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

describe('texts in JSON bodies (issue 40, item 7c): a title or name shows something and holds no control character', () => {
  const ONE_LINE = 'must contain a visible character, on one line, without control or invalid characters';
  const blank: Array<[string, string]> = [
    ['only spaces', '   '],
    ['only ideographic spaces and a tab', '\u3000\u3000\t'],
    ['only a zero-width space', '\u200b'],
    ['a NUL', 'a\u0000b'],
    ['a bell', 'a\u0007b'],
    ['a line break', 'two\nlines'],
    ['an escape sequence', '\u001b[31mred'],
    ['a C1 control character', 'a\u0085b'],
    ['a lone surrogate (half a UTF-16 pair)', 'x\ud800y'],
  ];
  /** The three bodies whose required text the probe sent: a voucher's title, a shop's name, a blog's title. */
  const posts = (text: string): Array<[string, string]> => [
    ['/api/voucher/seckill', voucher({ title: JSON.stringify(text) })],
    ['/api/shop', JSON.stringify({ name: text, typeId, address: 'West Lake 1', x: 120.15, y: 30.28 })],
    ['/api/blog', JSON.stringify({ shopId, title: text, content: 'Good noodles' })],
  ];

  it.each(blank)('refuses a title or name of %s with 400 naming the field', async (_name, text) => {
    for (const [url, body] of posts(text)) {
      const response = await postJson(url, body);
      const field = url === '/api/shop' ? 'name' : 'title';
      expect(response.statusCode, `${url}: ${response.body}`).toBe(400);
      expect(response.json(), url).toEqual({ success: false, errorMsg: `body.${field} ${ONE_LINE}` });
    }
  });

  it('refuses control characters in the other texts: a blog body keeps line breaks and tabs, a shop address stays one line', async () => {
    const content = await postJson('/api/blog', JSON.stringify({ shopId, title: 'Noodles', content: 'good\u0000' }));
    expect(content.json()).toEqual({
      success: false,
      errorMsg: 'body.content must contain a visible character and no control or invalid characters but line breaks and tabs',
    });
    const spaces = await postJson('/api/blog', JSON.stringify({ shopId, title: 'Noodles', content: ' \n\t ' }));
    expect(spaces.json<{ errorMsg: string }>().errorMsg).toMatch(/^body\.content must contain a visible character/);
    const rules = await postJson('/api/voucher', voucher({ rules: '"no change\\u0008"' }, 'plain'));
    expect(rules.json()).toEqual({ success: false, errorMsg: 'body.rules must contain no control or invalid characters but line breaks and tabs' });
    const address = await app.inject({
      method: 'PUT',
      url: '/api/shop',
      headers: admin,
      payload: { id: shopId, address: 'West Lake\r\n1' },
    });
    expect(address.json()).toEqual({ success: false, errorMsg: `body.address ${ONE_LINE}` });
    const area = await app.inject({ method: 'PUT', url: '/api/shop', headers: admin, payload: { id: shopId, area: '\u0000' } });
    expect(area.json()).toEqual({ success: false, errorMsg: 'body.area must be one line without control or invalid characters' });
  });

  it('accepts what people write: any script, emoji with joiners, inner spaces, empty optional texts, line breaks in multi-line texts', async () => {
    const title = '  牛肉面 🧑‍🍳 five\u00a0stars  ';
    const created = [
      await postJson('/api/voucher/seckill', voucher({ title: JSON.stringify(title), subTitle: '""', rules: JSON.stringify('one\r\ntwo\tthree') })),
      await postJson('/api/shop', JSON.stringify({ name: title, typeId, address: 'West Lake 1', area: '', x: 120.15, y: 30.28 })),
      await postJson('/api/blog', JSON.stringify({ shopId, title, content: 'First line\n\n\tindented' })),
    ];
    expect(
      created.map((response) => response.statusCode),
      created.map((response) => response.body).join('\n'),
    ).toEqual([200, 200, 200]);
    const blog = await app.inject({ url: `/api/blog/${created[2]!.json<{ data: string }>().data}`, headers: admin });
    expect(blog.json<{ data: { title: string; content: string } }>().data).toMatchObject({ title, content: 'First line\n\n\tindented' });
  });
});
