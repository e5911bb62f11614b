import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import type { BrowserContextOptions, Locator, Page } from 'playwright-core';
import { expect } from 'vitest';
import { DEMO_SECKILL_VOUCHER_ID } from '../../../src/infra/seed/demo-data.js';
import { demoPicture } from '../../../src/infra/seed/demo-images.js';
import type { TestBrowser } from '../../support/browser.js';
import type { InboxSmsSender, TestEnv } from '../../support/test-env.js';

/**
 * The user journeys of the browser tests, each taking the site it runs against: the same steps run
 * against the app itself (app.test.ts, hmdp-compat.test.ts) and through the edge in front of it
 * (through-edge.test.ts). Our web app's journeys drive its pages in Chromium; the course's
 * front end's call the fixture page that talks like the course's pages (fixtures/hmdp-pages).
 */

/** Our web app, where a browser opens it. */
export interface WebSite {
  /** The app itself, or the edge in front of it. */
  baseURL: string;
  chrome: TestBrowser;
  sms: InboxSmsSender;
  env: TestEnv;
  /** The folder (ending in /) the journeys' screenshots go to. */
  screenshots: string;
}

/** The page's sessionStorage, typed without the DOM library (inline it in page functions: they are serialised). */
export type BrowserGlobals = { sessionStorage: { getItem(key: string): string | null; setItem(key: string, value: string): void } };

/** Opens a page, runs the steps, saves a screenshot, and checks the console stayed clean. */
export async function withPage(
  site: WebSite,
  screenshot: string,
  steps: (page: Page) => Promise<void>,
  options: { token?: string; context?: BrowserContextOptions; allowedErrors?: RegExp } = {},
): Promise<void> {
  const { context, page, errors } = await site.chrome.newPage(site.baseURL, { mobile: true, context: options.context });
  try {
    if (options.token) {
      // Serialised into the page: it cannot call functions of this file.
      await context.addInitScript((token) => (globalThis as unknown as BrowserGlobals).sessionStorage.setItem('token', token), options.token);
    }
    await steps(page);
    await page.screenshot({ path: `${site.screenshots}${screenshot}.png` });
    expect(errors.filter((error) => !options.allowedErrors?.test(error))).toEqual([]);
  } finally {
    await context.close();
  }
}

/** Logs in through the login page, reading the code from the test's SMS inbox. */
export async function logIn(site: WebSite, page: Page, phone: string, { open = true, then = '/' } = {}): Promise<void> {
  if (open) await page.goto('/login');
  await page.getByTestId('phone').fill(phone);
  await page.getByTestId('send-code').click();
  await expect.poll(() => site.sms.sent.some((m) => m.phone === phone)).toBe(true);
  await page.getByTestId('code').fill(site.sms.lastCodeFor(phone));
  await page.getByTestId('login').click();
  await page.waitForURL(`${site.baseURL}${then}`);
}

/**
 * The voucher's order state, or the error the page shows instead, read without waiting for either
 * (a locator's textContent waits up to the default timeout for its element): a purchase that fails
 * then fails the poll with the page's own message, well within the test's time.
 */
export async function orderStateOf(voucher: Locator): Promise<string> {
  for (const testId of ['order-state', 'buy-error']) {
    const element = voucher.getByTestId(testId);
    if ((await element.count()) > 0) return `${testId}: ${(await element.first().textContent()) ?? ''}`;
  }
  return 'neither an order state nor an error yet';
}

/**
 * Three shop pictures in the upload folder (`/imgs/shops/test-{0,1,2}.png`), shown as demo shop
 * 1's (the demo data's own pictures come with the seed's demo content): its page loads clean.
 */
export async function givePicturesToShop1(env: TestEnv): Promise<void> {
  await mkdir(join(env.config.upload.dir, 'shops'), { recursive: true });
  for (const variant of [0, 1, 2]) await writeFile(join(env.config.upload.dir, 'shops', `test-${variant}.png`), demoPicture({ hue: 20, variant }));
  await env.db.updateTable('tb_shop').set({ images: '/imgs/shops/test-0.png,/imgs/shops/test-1.png,/imgs/shops/test-2.png' }).where('id', '=', '1').execute();
}

/** A real PNG (an orange gradient), as a phone photo would be: the server sniffs the bytes. */
export function pngImage(width = 240, height = 160): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (bytes: Buffer) => {
    let c = 0xffffffff;
    for (const b of bytes) c = crcTable[(c ^ b) & 0xff]! ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const out = Buffer.alloc(body.length + 8);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc(body), body.length + 4);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const rows = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) rows.set([255, 102 + Math.floor((x / width) * 120), 51 + Math.floor((y / height) * 150)], y * (width * 3 + 1) + 1 + x * 3);
  }
  return Buffer.concat([
    Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(rows)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

// --- Our web app's journeys ---

/** Logs in with the phone and the SMS code; the session's token is kept, the home page shown. */
export async function logInJourney(site: WebSite, phone: string): Promise<void> {
  await withPage(site, 'login', async (page) => {
    await page.goto('/login');
    await expect(page.getByTestId('code-hint').textContent()).resolves.toContain('服务器日志');
    await logIn(site, page, phone);
    await page.getByText('我的订单').waitFor();
    const token = await page.evaluate(() => (globalThis as unknown as BrowserGlobals).sessionStorage.getItem('token'));
    expect(token).toMatch(/^[\w-]{20,}$/);
    await page.getByTestId('type').first().waitFor();
  });
}

/** A visitor (no session) opens the home page's shop types, then demo shop 1's page and its vouchers. */
export async function visitShopJourney(site: WebSite): Promise<void> {
  await withPage(site, 'visit-shop', async (page) => {
    await page.goto('/');
    await expect.poll(() => page.getByTestId('type').count()).toBeGreaterThan(0);
    await page.goto('/shops/1');
    await expect.poll(() => page.getByTestId('shop-title').textContent()).toContain('103茶餐厅');
    const voucher = page.getByTestId('seckill-voucher');
    await expect.poll(() => voucher.getByTestId('stock').textContent()).toMatch(/^剩余 \d+ 张$/);
    await expect(page.getByTestId('voucher').count()).resolves.toBeGreaterThan(0); // the plain vouchers beside it
  });
}

/** Buys demo shop 1's seckill voucher: queued, then created, shown in my orders, paid; a second buy is refused. */
export async function buySeckillJourney(site: WebSite, phone: string): Promise<void> {
  const { context, page, errors } = await site.chrome.newPage(site.baseURL, { mobile: true });
  try {
    await logIn(site, page, phone);
    await page.goto('/shops/1');
    const voucher = page.getByTestId('seckill-voucher');
    await expect.poll(() => voucher.getByTestId('stock').textContent()).toBe('剩余 100 张');
    await expect.poll(() => voucher.getByTestId('countdown').textContent()).toMatch(/距结束 \d+天 \d\d:\d\d:\d\d/);
    await voucher.getByTestId('buy').click();
    await expect.poll(() => orderStateOf(voucher), { timeout: 15_000 }).toBe('order-state: 已创建 · 待支付');
    const orderId = (await voucher.getByTestId('order-id').textContent())!;
    expect(orderId).toMatch(/^\d{15,20}$/); // a 64-bit id, kept as a decimal string
    await expect(voucher.getByTestId('stock').textContent()).resolves.toBe('剩余 99 张');
    await page.screenshot({ path: `${site.screenshots}seckill-order.png` });

    const row = await site.env.db.selectFrom('tb_voucher_order').select(['id', 'voucher_id']).where('id', '=', orderId).executeTakeFirst();
    expect(row).toEqual({ id: orderId, voucher_id: DEMO_SECKILL_VOUCHER_ID });

    await voucher.getByTestId('to-orders').click();
    const orderRow = page.getByTestId('order-row').filter({ hasText: orderId });
    await expect.poll(() => orderRow.getByTestId('order-state').textContent()).toBe('已创建 · 待支付');
    await orderRow.getByTestId('pay').click();
    await expect.poll(() => orderRow.getByTestId('order-state').textContent()).toBe('已支付');

    // Again from the shop page: the sale answers "already bought" and the page says so.
    await page.goto('/shops/1');
    await page.getByTestId('seckill-voucher').getByTestId('buy').click();
    await expect.poll(() => page.getByTestId('buy-error').textContent()).toBe('不允许重复下单！'); // the page's language (zh-CN), not the browser's
    expect(errors).toEqual([]);

    // My orders comes from the server: a fresh browser (none of this one's storage) with the same session lists it.
    const token = (await page.evaluate(() => (globalThis as unknown as BrowserGlobals).sessionStorage.getItem('token')))!;
    await withPage(
      site,
      'my-orders',
      async (fresh) => {
        await fresh.goto('/orders');
        const listed = fresh.getByTestId('order-row');
        await expect.poll(() => listed.getByTestId('order-id').allTextContents()).toEqual([orderId]);
        await expect(listed.getByTestId('order-title').textContent()).resolves.toBe('100元代金券');
        await expect(listed.getByTestId('order-state').textContent()).resolves.toBe('已支付');
        await expect.poll(() => listed.textContent()).toContain('103茶餐厅'); // the shop's name, loaded by id
        await expect(fresh.getByTestId('orders-total').textContent()).resolves.toBe('共 1 单');
      },
      { token },
    );
  } finally {
    await context.close();
  }
}

/** One user writes a blog with an image; another finds it among the hot blogs and likes it. */
export async function blogJourney(site: WebSite, [author, reader]: [string, string]): Promise<void> {
  let blogPath = '';
  await withPage(site, 'write-blog', async (page) => {
    await logIn(site, page, author);
    await page.getByTestId('nav-write').click();
    await page.getByTestId('blog-title-input').fill('运河边的早茶');
    await page.getByTestId('blog-content').fill('虾饺皮薄馅大，推荐！');
    await page.getByTestId('blog-image').setInputFiles({ name: 'photo.png', mimeType: 'image/png', buffer: pngImage() });
    const image = page.getByTestId('uploaded-image');
    await image.waitFor();
    await expect.poll(() => image.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBe(240);
    await page.getByTestId('publish').click();
    await page.waitForURL(/\/blogs\/\d+$/);
    await expect.poll(() => page.getByTestId('blog-title').textContent()).toBe('运河边的早茶');
    blogPath = new URL(page.url()).pathname;
  });
  const stored = await site.env.db.selectFrom('tb_blog').select(['title', 'images']).where('id', '=', blogPath.split('/').pop()!).executeTakeFirstOrThrow();
  expect(stored.title).toBe('运河边的早茶');
  expect(stored.images).toMatch(/^\/blogs\/\d+\/\d+\/[\w-]+\.png$/);

  await withPage(site, 'blog-like', async (page) => {
    await logIn(site, page, reader);
    await page.getByTestId('blog').filter({ hasText: '运河边的早茶' }).click();
    await page.waitForURL(`${site.baseURL}${blogPath}`);
    await expect.poll(() => page.getByTestId('likers').textContent()).toBe('还没有人点赞');
    await page.getByTestId('like').click();
    await expect.poll(() => page.getByTestId('like').textContent()).toBe('♥ 1');
    await expect.poll(() => page.getByTestId('likers').textContent()).toMatch(/^user_/);
  });
}

// --- The course's front end's journeys (HMDP_COMPAT) ---

/** What a course page shows after a call: the data, or the message it would show. */
export interface Shown {
  ok: boolean;
  data?: unknown;
  message?: string;
}
type Pages = Record<string, (...args: unknown[]) => Promise<Shown>>;

/** Calls the fixture page's `pages[name]` (what a course page calls) in the browser. */
export type CoursePages = (name: string, ...args: unknown[]) => Promise<Shown>;

export const coursePagesOf =
  (page: Page): CoursePages =>
  (name, ...args) =>
    page.evaluate(([fn, rest]) => (globalThis as unknown as { pages: Pages }).pages[fn]!(...rest), [name, args] as const);

/** A bad phone is refused with the server's reason; then the login with the code opens a session. */
export async function courseLogInJourney(call: CoursePages, sms: InboxSmsSender, phone: string): Promise<void> {
  const bad = await call('sendCode', '123');
  expect(bad.ok).toBe(false);
  expect(bad.message).not.toBe('服务器异常');
  expect(bad.message).toMatch(/phone/i);
  expect(await call('sendCode', phone)).toMatchObject({ ok: true });
  const wrong = await call('login', phone, '000000');
  expect(wrong.ok).toBe(false);
  expect(wrong.message).not.toBe('服务器异常');
  expect(await call('login', phone, sms.lastCodeFor(phone))).toMatchObject({ ok: true });
  expect(await call('me')).toMatchObject({ ok: true, data: { nickName: expect.any(String) } });
}

/** A shop is shown; an unknown shop's refusal is shown with its reason. */
export async function courseReadShopsJourney(call: CoursePages): Promise<void> {
  expect(await call('shop', 1)).toMatchObject({ ok: true, data: { id: '1' } });
  const unknown = await call('shop', 987654);
  expect(unknown).toMatchObject({ ok: false });
  expect(unknown.message).not.toBe('服务器异常');
}

/** Following yourself is refused with its reason (a session is open). */
export async function courseFollowSelfJourney(call: CoursePages): Promise<void> {
  const me = (await call('me')).data as { id: string };
  const self = await call('follow', me.id);
  expect(self.ok).toBe(false);
  expect(self.message).not.toBe('服务器异常');
}

/** The editor uploads a picture and publishes with it named as it shows it, and shows it at that name. */
export async function coursePublishJourney(call: CoursePages): Promise<void> {
  const uploaded = await call('upload', [...demoPicture({ hue: 20, variant: 2, width: 24, height: 16 })]);
  const fileList = [`/imgs${String(uploaded.data)}`];
  const published = await call('publish', { title: '编辑器发布', content: '从 blog-edit.html 发布' }, fileList, '1');
  expect(published).toMatchObject({ ok: true, data: expect.any(String) });
  const blog = await call('blog', published.data);
  expect(blog).toMatchObject({ ok: true, data: { images: fileList.join(',') } });
  expect(await call('pictureWidth', fileList[0])).toEqual({ ok: true, data: 24 });
}
