import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDemoData } from '../../../src/infra/seed/load-demo-data.js';
import { HOUR, insertSeckillVoucher } from '../../support/seckill.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type InboxSmsSender, type TestEnv } from '../../support/test-env.js';

/**
 * errorMsg in the request's language (Accept-Language; Chinese by default, as hmdp): the same
 * refusals asked for in Chinese, in English and with no preference, on /api and on the
 * HMDP_COMPAT surface. The other tests read English (test-env sets DEFAULT_LANGUAGE=en); this
 * file runs with the shipped default.
 */
let env: TestEnv;
let app: FastifyInstance;
let sms: InboxSmsSender;
let users: Array<{ id: string; token: string }>;

beforeAll(async () => {
  env = await createTestEnv({ DEFAULT_LANGUAGE: 'zh', HMDP_COMPAT: 'true', SECKILL_WORKER: 'true' });
  await loadDemoData(env.db);
  users = await createUsersWithSessions(env, 6, 15_800_000_000);
  ({ app, sms } = await buildTestApp(env));
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

type Ask = Omit<InjectOptions, 'headers'> & { headers?: Record<string, string> };

/** The errorMsg of one request sent with `acceptLanguage` (undefined: no header). */
async function errorMsg(request: Ask, acceptLanguage?: string): Promise<string> {
  const headers = { ...request.headers, ...(acceptLanguage === undefined ? {} : { 'accept-language': acceptLanguage }) };
  const response = await app.inject({ ...request, headers } as InjectOptions);
  const body = response.json<{ success: boolean; errorMsg?: string }>();
  expect(body.success, response.body).toBe(false);
  return body.errorMsg ?? '';
}

/** The message in Chinese (zh-CN, and by default) and in English (en-US). */
async function expectBoth(request: Ask, zh: string | RegExp, en: string | RegExp): Promise<void> {
  const matches = (text: string, expected: string | RegExp) => (typeof expected === 'string' ? expect(text).toBe(expected) : expect(text).toMatch(expected));
  matches(await errorMsg(request, 'zh-CN,zh;q=0.9'), zh);
  matches(await errorMsg(request), zh);
  matches(await errorMsg(request, 'en-US,en;q=0.9'), en);
}

const auth = (user: { token: string }) => ({ authorization: user.token });

describe('errorMsg in the request language', () => {
  it('login: a wrong code and a phone of the wrong form', async () => {
    const phone = '13800001111';
    await app.inject({ method: 'POST', url: `/api/user/code?phone=${phone}` });
    const wrong = sms.lastCodeFor(phone) === '000000' ? '111111' : '000000';
    await expectBoth({ method: 'POST', url: '/api/user/login', payload: { phone, code: wrong } }, '验证码错误', 'Wrong code');
    await expectBoth(
      { method: 'POST', url: '/api/user/code?phone=12345' },
      '手机号格式错误（querystring.phone）',
      'querystring.phone must be a mainland-China mobile number (11 digits starting with 13-19)',
    );
  });

  it('an unknown shop, following yourself, no route, not logged in', async () => {
    await expectBoth({ method: 'GET', url: '/api/shop/99999999' }, '店铺不存在（99999999）', 'Shop 99999999 not found');
    const [me] = users;
    await expectBoth(
      { method: 'PUT', url: `/api/follow/${me!.id}/true`, headers: auth(me!) },
      /^不能关注自己/,
      'params.id must be another user: you cannot follow yourself',
    );
    await expectBoth({ method: 'GET', url: '/api/no/such/route' }, '接口不存在：GET /api/no/such/route', 'No route for GET /api/no/such/route');
    await expectBoth({ method: 'GET', url: '/api/user/me' }, '请先登录', 'Please log in first');
    await expectBoth({ method: 'GET', url: '/api/shop/%E0%A4%A' }, 'URL 格式错误（百分号编码无效）', 'The URL is malformed (bad percent-encoding)');
  });

  it("the router's and the static files' refusals: an over-long path parameter, a path traversal, a dotfile", async () => {
    await expectBoth({ method: 'GET', url: `/api/shop/${'9'.repeat(101)}` }, '路径参数过长', 'A path parameter is too long');
    await expectBoth({ method: 'GET', url: '/imgs/..%2f..%2fetc%2fpasswd' }, '禁止访问该路径', 'Access to this path is forbidden');
    await expectBoth({ method: 'GET', url: '/imgs/.hidden' }, '禁止访问该路径', 'Access to this path is forbidden');
  });

  it('the sale: already bought, sold out, not started, ended', async () => {
    const [first, second, third] = users;
    const voucher = await insertSeckillVoucher(env, { stock: 2 });
    const buy = (user: { token: string }, voucherId = voucher): Ask => ({
      method: 'POST',
      url: `/api/voucher-order/seckill/${voucherId}`,
      headers: auth(user),
    });
    expect((await app.inject(buy(first!) as InjectOptions)).json()).toMatchObject({ success: true });
    await expectBoth(buy(first!), '不允许重复下单！', 'You already have an order for this voucher');
    expect((await app.inject(buy(second!) as InjectOptions)).json()).toMatchObject({ success: true });
    await expectBoth(buy(third!), '库存不足！', 'Sold out');
    const later = await insertSeckillVoucher(env, { stock: 5, begin: new Date(Date.now() + HOUR), end: new Date(Date.now() + 2 * HOUR) });
    await expectBoth(buy(third!, later), '秒杀尚未开始！', 'The sale has not started yet');
    const over = await insertSeckillVoucher(env, { stock: 5, begin: new Date(Date.now() - 2 * HOUR), end: new Date(Date.now() - HOUR) });
    await expectBoth(buy(third!, over), '秒杀已经结束！', 'The sale has ended');
  });

  it('validation: a field with its own message, a type, a missing field, a bound', async () => {
    const [writer] = users;
    await expectBoth(
      { method: 'GET', url: '/api/blog/hot?current=0' },
      '页码应为从 1 开始的整数（querystring.current）',
      'querystring.current must be a page number from 1',
    );
    const blog = (payload: object): Ask => ({ method: 'POST', url: '/api/blog', headers: auth(writer!), payload });
    await expectBoth(blog({ shopId: '1', title: 123, content: 'x', images: '' }), '参数 body.title 的类型应为 string', 'body.title must be string');
    await expectBoth(blog({ shopId: '1', content: 'x', images: '' }), '缺少参数 body.title', 'body.title is required');
    await expectBoth(
      { method: 'POST', url: '/api/user/login', payload: { phone: '13800001111', code: '12' } },
      /^验证码应为短信收到的 6 位数字/,
      /^body.code must be the 6-digit code/,
    );
  });
});

describe('choosing the language', () => {
  const unknownShop: Ask = { method: 'GET', url: '/api/shop/99999999' };

  it('follows q-values and regions, and answers Chinese to anything else', async () => {
    expect(await errorMsg(unknownShop, 'en;q=0.5, zh;q=0.9')).toBe('店铺不存在（99999999）');
    expect(await errorMsg(unknownShop, 'zh-TW')).toBe('店铺不存在（99999999）');
    expect(await errorMsg(unknownShop, 'en-GB')).toBe('Shop 99999999 not found');
    expect(await errorMsg(unknownShop, 'fr-FR, en;q=0.8')).toBe('Shop 99999999 not found');
    expect(await errorMsg(unknownShop, 'fr, de')).toBe('店铺不存在（99999999）');
    expect(await errorMsg(unknownShop, '*')).toBe('店铺不存在（99999999）');
    expect(await errorMsg(unknownShop, 'not a language header;;;')).toBe('店铺不存在（99999999）');
  });

  it('holds on the HMDP_COMPAT surface too (refusals there are 200s)', async () => {
    const [buyer] = users;
    const voucher = await insertSeckillVoucher(env, { stock: 5, begin: new Date(Date.now() + HOUR), end: new Date(Date.now() + 2 * HOUR) });
    const order = (language?: string) =>
      app.inject({
        method: 'POST',
        url: `/voucher-order/seckill/${voucher}`,
        headers: { ...auth(buyer!), accept: 'application/json, text/plain, */*', ...(language ? { 'accept-language': language } : {}) },
      });
    for (const [language, text] of [
      [undefined, '秒杀尚未开始！'],
      ['zh-CN', '秒杀尚未开始！'],
      ['en', 'The sale has not started yet'],
    ] as const) {
      const response = await order(language);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ success: false, errorMsg: text });
    }
    const unknown = await app.inject({ method: 'GET', url: '/shop/99999999', headers: { accept: 'application/json', 'accept-language': 'zh' } });
    expect(unknown.statusCode).toBe(200);
    expect(unknown.headers['x-hmdp-status']).toBe('404');
    expect(unknown.json()).toEqual({ success: false, errorMsg: '店铺不存在（99999999）' });
  });
});
