import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { deflateSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import type { BrowserContextOptions, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_SECKILL_VOUCHER_ID } from '../../../src/infra/seed/demo-data.js';
import { demoPicture } from '../../../src/infra/seed/demo-images.js';
import { loadDemoData } from '../../../src/infra/seed/load-demo-data.js';
import { launchBrowser, type TestBrowser } from '../../support/browser.js';
import { HOUR, insertSeckillVoucher } from '../../support/seckill.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, grantAdmin, type InboxSmsSender, type TestEnv } from '../../support/test-env.js';

/**
 * The web front end (web/, served by the app at /) in Debian's Chromium: the real app on a
 * random port with the demo data and its order worker, driven like a user would.
 */
// Every run saves its screenshots under test-results/ (ignored by git); UPDATE_SCREENSHOTS=1
// writes the ones the README shows (docs/screenshots/) instead, so a test run leaves the tree clean.
const SCREENSHOTS = fileURLToPath(
  new URL(process.env.UPDATE_SCREENSHOTS === '1' ? '../../../docs/screenshots/' : '../../../test-results/screenshots/', import.meta.url),
);
const PHONE = '13912345678';
/** Demo user 1, made an administrator as scripts/start.sh does (npm run admin -- grant). */
const ADMIN_PHONE = '13686869696';
/** The page's sessionStorage, typed without the DOM library (inline it in page functions: they are serialised). */
type BrowserGlobals = { sessionStorage: { getItem(key: string): string | null; setItem(key: string, value: string): void } };

let env: TestEnv;
let app: FastifyInstance;
let sms: InboxSmsSender;
let baseURL: string;
let chrome: TestBrowser;

beforeAll(async () => {
  // A cheap captcha (attempts of 100 PBKDF2 rounds; the captcha sale below sets the fewest attempts a sale may):
  // the test proves the page solves it, not what it costs. The pages' flows, not the request
  // deadline (deadlines.test.ts), are under test: a generous deadline keeps a request slowed by
  // the suite's other work (the type checks start beside these tests) from answering 503.
  env = await createTestEnv({ SECKILL_WORKER: 'true', PURCHASE_CAPTCHA_ITERATIONS: '100', REQUEST_DEADLINE_MS: '10000' });
  await loadDemoData(env.db);
  await grantAdmin(env, ADMIN_PHONE);
  // More restaurants near the default point, so the list of type 1 spans two pages (5 a page), with photos.
  await mkdir(join(env.config.upload.dir, 'shops'), { recursive: true });
  for (const variant of [0, 1, 2]) await writeFile(join(env.config.upload.dir, 'shops', `test-${variant}.png`), demoPicture({ hue: 20, variant }));
  // The demo shop of the seckill voucher too (the demo data's pictures come with the seed's demo content).
  await env.db.updateTable('tb_shop').set({ images: '/imgs/shops/test-0.png,/imgs/shops/test-1.png,/imgs/shops/test-2.png' }).where('id', '=', '1').execute();
  await env.db
    .insertInto('tb_shop')
    .values(
      Array.from({ length: 8 }, (_, i) => ({
        id: String(1001 + i),
        name: `测试小馆${i + 1}号`,
        type_id: '1',
        images: `/imgs/shops/test-${i % 3}.png`,
        area: '运河上街',
        address: `台州路${i + 1}号`,
        x: 120.149993 + 0.002 * (i + 1),
        y: 30.334229,
        avg_price: '60',
        sold: 10,
        comments: 5,
        score: 45,
        open_hours: '10:00-22:00',
      })),
    )
    .execute();
  ({ app, sms } = await buildTestApp(env));
  baseURL = await app.listen({ host: '127.0.0.1', port: 0 });
  chrome = await launchBrowser();
  await mkdir(SCREENSHOTS, { recursive: true });
});

afterAll(async () => {
  await chrome?.close();
  await app?.close();
  await env?.cleanup();
});

/** Opens a page, runs the steps, saves a screenshot, and checks the console stayed clean. */
async function withPage(
  screenshot: string,
  steps: (page: Page) => Promise<void>,
  options: { token?: string; context?: BrowserContextOptions; allowedErrors?: RegExp } = {},
): Promise<void> {
  const { context, page, errors } = await chrome.newPage(baseURL, { mobile: true, context: options.context });
  try {
    if (options.token) {
      // Serialised into the page: it cannot call functions of this file.
      await context.addInitScript((token) => (globalThis as unknown as BrowserGlobals).sessionStorage.setItem('token', token), options.token);
    }
    await steps(page);
    await page.screenshot({ path: `${SCREENSHOTS}${screenshot}.png` });
    expect(errors.filter((error) => !options.allowedErrors?.test(error))).toEqual([]);
  } finally {
    await context.close();
  }
}

/**
 * The voucher's order state, or the error the page shows instead, read without waiting for either
 * (a locator's textContent waits up to the default timeout for its element): a purchase that fails
 * then fails the poll with the page's own message, well within the test's time.
 */
async function orderStateOf(voucher: Locator): Promise<string> {
  for (const testId of ['order-state', 'buy-error']) {
    const element = voucher.getByTestId(testId);
    if ((await element.count()) > 0) return `${testId}: ${(await element.first().textContent()) ?? ''}`;
  }
  return 'neither an order state nor an error yet';
}

/** A real PNG (an orange gradient), as a phone photo would be: the server sniffs the bytes. */
function pngImage(width = 240, height = 160): Buffer {
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

/** Metres between two points on Redis GEO's sphere (haversine, radius 6372797.560856 m), shops as x = longitude, y = latitude. */
function geoDistance(from: { latitude: number; longitude: number }, shop: { x: number; y: number }): number {
  const rad = (degrees: number) => (degrees * Math.PI) / 180;
  const dLat = rad(shop.y - from.latitude);
  const dLon = rad(shop.x - from.longitude);
  const a = Math.sin(dLat / 2) ** 2 + Math.cos(rad(from.latitude)) * Math.cos(rad(shop.y)) * Math.sin(dLon / 2) ** 2;
  return 2 * 6372797.560856 * Math.asin(Math.sqrt(a));
}

/** Logs in through the login page, reading the code from the test's SMS inbox. */
async function logIn(page: Page, phone: string, { open = true, then = '/' } = {}): Promise<void> {
  if (open) await page.goto('/login');
  await page.getByTestId('phone').fill(phone);
  await page.getByTestId('send-code').click();
  await expect.poll(() => sms.sent.some((m) => m.phone === phone)).toBe(true);
  await page.getByTestId('code').fill(sms.lastCodeFor(phone));
  await page.getByTestId('login').click();
  await page.waitForURL(`${baseURL}${then}`);
}

describe('web front end', () => {
  it('serves the app at / and keeps /api and unknown API paths as they were', async () => {
    const index = await fetch(`${baseURL}/shops/1`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toContain('text/html');
    expect(await index.text()).toContain('<div id="app">');
    const api = await fetch(`${baseURL}/api/no/such/thing`);
    expect(api.status).toBe(404);
    expect(await api.json()).toEqual({ success: false, errorMsg: 'No route for GET /api/no/such/thing' });
  });

  it('logs in with the phone and the SMS code', async () => {
    await withPage('login', async (page) => {
      await page.goto('/login');
      await expect(page.getByTestId('code-hint').textContent()).resolves.toContain('服务器日志');
      await logIn(page, PHONE);
      await page.getByText('我的订单').waitFor();
      const token = await page.evaluate(() => (globalThis as unknown as BrowserGlobals).sessionStorage.getItem('token'));
      expect(token).toMatch(/^[\w-]{20,}$/);
      await page.getByTestId('type').first().waitFor();
    });
  });

  it('browses the shops of a type, nearest first with distances, loading more on scroll', async () => {
    await withPage('shops-of-type', async (page) => {
      await page.goto('/');
      await page.getByTestId('type').filter({ hasText: '美食' }).click();
      await page.waitForURL(/\/shops\/type\/1$/);
      await expect.poll(() => page.getByTestId('shop').count()).toBeGreaterThanOrEqual(5);
      // Scrolling to the end of the list loads the next page (and the one after, which is empty).
      await page.getByTestId('list-state').scrollIntoViewIfNeeded();
      await expect.poll(() => page.getByTestId('list-state').textContent()).toContain('没有更多了');
      const distances = await page.getByTestId('distance').allTextContents();
      expect(distances.length).toBe(10); // 8 test shops + the 2 demo restaurants within 5 km of the default point
      const metres = distances.map((d) => (d.endsWith('km') ? Number.parseFloat(d) * 1000 : Number.parseFloat(d)));
      expect(metres.every((m) => Number.isFinite(m))).toBe(true);
      expect([...metres].sort((a, b) => a - b)).toEqual(metres);
      await page.getByTestId('shop').first().scrollIntoViewIfNeeded();
      const photo = page.getByTestId('shop').filter({ hasText: '测试小馆1号' }).getByTestId('picture'); // loaded in the screenshot
      await expect.poll(() => photo.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBeGreaterThan(0);
    });
  });

  it("sorts the shops of a type by distance from the browser's location once it is allowed", async () => {
    const here = { latitude: 30.3185, longitude: 120.142 }; // 拱宸桥, 1.9 km south-west of the default point
    const shops = await env.db.selectFrom('tb_shop').select(['name', 'x', 'y']).where('type_id', '=', '1').execute();
    const nearest = (from: { latitude: number; longitude: number }) =>
      shops
        .map((shop) => ({ name: shop.name, metres: geoDistance(from, shop) }))
        .filter((shop) => shop.metres <= 5_000)
        .sort((a, b) => a.metres - b.metres);
    const expected = nearest(here);
    expect(expected.length).toBeGreaterThanOrEqual(6);
    // The order really depends on the point: from the default point the first page differs.
    expect(
      nearest({ latitude: 30.334229, longitude: 120.149993 })
        .slice(0, 5)
        .map((shop) => shop.name),
    ).not.toEqual(expected.slice(0, 5).map((shop) => shop.name));
    await withPage(
      'shops-near-me',
      async (page) => {
        await page.goto('/shops/type/1');
        await expect.poll(() => page.getByTestId('locate').textContent()).toBe('已用我的位置');
        const firstNames = async () => (await page.getByTestId('shop-name').allTextContents()).slice(0, 5);
        await expect.poll(firstNames).toEqual(expected.slice(0, 5).map((shop) => shop.name));
        await page.getByTestId('list-state').scrollIntoViewIfNeeded(); // and the next pages, until the end
        await expect.poll(() => page.getByTestId('list-state').textContent()).toContain('没有更多了');
        const names = await page.getByTestId('shop-name').allTextContents();
        const distances = await page.getByTestId('distance').allTextContents();
        expect(names).toEqual(expected.map((shop) => shop.name));
        distances.forEach((label, i) => {
          const metres = label.endsWith('km') ? Number.parseFloat(label) * 1000 : Number.parseFloat(label);
          // Shown as whole metres below 1 km, else km with one decimal; Redis GEO stores 52-bit geohashes (< 1 m off).
          expect(Math.abs(metres - expected[i]!.metres), `${names[i] ?? '?'}: ${label}`).toBeLessThanOrEqual(label.endsWith('km') ? 51 : 2);
        });
        await page.getByTestId('type-title').scrollIntoViewIfNeeded(); // the screenshot shows the top: 你的位置
      },
      { context: { permissions: ['geolocation'], geolocation: here } },
    );
  });

  it('buys the seckill voucher: queued, then created, shown in my orders, paid; a second buy is refused', async () => {
    const { context, page, errors } = await chrome.newPage(baseURL, { mobile: true });
    try {
      await logIn(page, '13912340000');
      await page.goto('/shops/1');
      const voucher = page.getByTestId('seckill-voucher');
      await expect.poll(() => voucher.getByTestId('stock').textContent()).toBe('剩余 100 张');
      await expect.poll(() => voucher.getByTestId('countdown').textContent()).toMatch(/距结束 \d+天 \d\d:\d\d:\d\d/);
      await voucher.getByTestId('buy').click();
      await expect.poll(() => orderStateOf(voucher), { timeout: 15_000 }).toBe('order-state: 已创建 · 待支付');
      const orderId = (await voucher.getByTestId('order-id').textContent())!;
      expect(orderId).toMatch(/^\d{15,20}$/); // a 64-bit id, kept as a decimal string
      await expect(voucher.getByTestId('stock').textContent()).resolves.toBe('剩余 99 张');
      await page.screenshot({ path: `${SCREENSHOTS}seckill-order.png` });

      const row = await env.db.selectFrom('tb_voucher_order').select(['id', 'voucher_id']).where('id', '=', orderId).executeTakeFirst();
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
  });

  it('counts down to a sale that has not begun, the buy button disabled until the window opens', async () => {
    const begin = new Date(Math.ceil((Date.now() + 4_000) / 1000) * 1000); // a whole second, as MySQL stores it: 4-5 s from now
    await insertSeckillVoucher(env, { shopId: '5', title: '开抢倒计时券', stock: 5, begin, end: new Date(begin.getTime() + HOUR) });
    const [buyer] = await createUsersWithSessions(env, 1, 15_300_000_000);
    await withPage(
      'countdown-open',
      async (page) => {
        // The page's clock starts 30 s before the sale, so the countdown reads the same however long the page takes to load.
        await page.clock.install({ time: begin.getTime() - 30_000 });
        await page.goto('/shops/5');
        const voucher = page.getByTestId('seckill-voucher').filter({ hasText: '开抢倒计时券' });
        await expect.poll(() => voucher.getByTestId('countdown').textContent()).toMatch(/^距开抢 00:00:[0-3]\d$/);
        await expect(voucher.getByTestId('buy').isDisabled()).resolves.toBe(true);
        await page.screenshot({ path: `${SCREENSHOTS}countdown.png` });

        // The sale opens (the server decides by its own time); the page's clock catches up with the real one.
        await sleep(begin.getTime() + 200 - Date.now());
        await page.clock.setSystemTime(Date.now());
        await expect.poll(() => voucher.getByTestId('buy').isEnabled()).toBe(true);
        await expect(voucher.getByTestId('countdown').textContent()).resolves.toMatch(/^距结束 00:59:\d\d$/);
        await voucher.getByTestId('buy').click();
        await expect.poll(() => orderStateOf(voucher), { timeout: 15_000 }).toBe('order-state: 已创建 · 待支付');
      },
      { token: buyer!.token },
    );
  });

  it('buys a sale gated with a captcha: the page solves the proof of work (ALTCHA) itself, the token buys; the state is pushed (SSE)', async () => {
    const voucherId = await insertSeckillVoucher(env, { shopId: '9', title: '验证码秒杀券', stock: 5 });
    // The lowest cost a sale may set: the answer drawn from 1..100, about 50 attempts on average.
    const captchaMaxNumber = 100;
    await env.db
      .updateTable('tb_seckill_voucher')
      .set({ purchase_gate: 'captcha', captcha_max_number: captchaMaxNumber })
      .where('voucher_id', '=', voucherId)
      .execute();
    const [buyer] = await createUsersWithSessions(env, 1, 15_500_000_000);
    const streams: string[] = [];
    const solutions: Array<{ counter: number; derivedKey: string }> = [];
    await withPage(
      'gated-captcha',
      async (page) => {
        page.on('request', (request) => {
          if (request.url().endsWith(`/events`)) streams.push(request.url());
          if (request.url().endsWith(`/seckill/${voucherId}/token`)) {
            const { captcha } = request.postDataJSON() as { captcha: string };
            solutions.push((JSON.parse(atob(captcha)) as { solution: { counter: number; derivedKey: string } }).solution);
          }
        });
        await page.goto('/shops/9');
        const voucher = page.getByTestId('seckill-voucher').filter({ hasText: '验证码秒杀券' });
        await page.screenshot({ path: `${SCREENSHOTS}gated-captcha.png` });
        await voucher.getByTestId('buy').click();
        await expect.poll(() => orderStateOf(voucher), { timeout: 15_000 }).toBe('order-state: 已创建 · 待支付');
        await expect(voucher.getByTestId('captcha').count()).resolves.toBe(0);
      },
      { token: buyer!.token },
    );
    // One click: one challenge solved in Chromium (its answer found by trying 0..answer), one token, one order.
    expect(solutions).toHaveLength(1);
    expect(solutions[0]!.counter).toBeGreaterThanOrEqual(1);
    expect(solutions[0]!.counter).toBeLessThanOrEqual(captchaMaxNumber);
    expect(streams).toHaveLength(1);
  });

  it('shows the refusals of a sale: sold out (someone else took the last unit) and ended (the device clock was behind)', async () => {
    const soldOut = await insertSeckillVoucher(env, { shopId: '6', title: '最后一张券', stock: 1 });
    await insertSeckillVoucher(env, { shopId: '6', title: '刚结束的券', stock: 5, begin: new Date(Date.now() - HOUR), end: new Date(Date.now() - 60_000) });
    const [buyer, rival] = await createUsersWithSessions(env, 2, 15_400_000_000);
    await withPage(
      'sale-refusals',
      async (page) => {
        // This device's clock is 5 minutes behind: to the page both sales are still open. The server decides.
        await page.clock.setFixedTime(Date.now() - 5 * 60_000);
        await page.goto('/shops/6');
        const last = page.getByTestId('seckill-voucher').filter({ hasText: '最后一张券' });
        const ended = page.getByTestId('seckill-voucher').filter({ hasText: '刚结束的券' });
        await expect.poll(() => last.getByTestId('stock').textContent()).toBe('剩余 1 张');
        await expect(ended.getByTestId('countdown').textContent()).resolves.toMatch(/^距结束 00:0[34]:\d\d$/); // frozen 4 minutes before the end

        const taken = await fetch(`${baseURL}/api/voucher-order/seckill/${soldOut}`, { method: 'POST', headers: { authorization: rival!.token } });
        expect(await taken.json()).toMatchObject({ success: true });
        await last.getByTestId('buy').click();
        await expect.poll(() => last.getByTestId('buy-error').textContent()).toBe('库存不足！');
        await expect(last.getByTestId('buy').textContent()).resolves.toContain('已抢光');
        await expect(last.getByTestId('buy').isDisabled()).resolves.toBe(true);

        await ended.getByTestId('buy').click();
        await expect.poll(() => ended.getByTestId('buy-error').textContent()).toBe('秒杀已经结束！');
      },
      { token: buyer!.token },
    );
  });

  it('sends a visitor to the login page for pages that need a session, and back afterwards', async () => {
    await withPage('redirect-login', async (page) => {
      await page.goto('/orders');
      await page.waitForURL(/\/login\?redirect=(%2F|\/)orders$/);
      await logIn(page, '13912340001', { open: false, then: '/orders' });
      await page.getByTestId('no-orders').waitFor();
    });
  });

  it('writes a blog with an image; another user finds it among the hot blogs and likes it', async () => {
    let blogPath = '';
    await withPage('write-blog', async (page) => {
      await logIn(page, '13912340002');
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
    const stored = await env.db.selectFrom('tb_blog').select(['title', 'images']).where('id', '=', blogPath.split('/').pop()!).executeTakeFirstOrThrow();
    expect(stored.title).toBe('运河边的早茶');
    expect(stored.images).toMatch(/^\/blogs\/\d+\/\d+\/[\w-]+\.png$/);

    await withPage('blog-like', async (page) => {
      await logIn(page, '13912340003');
      await page.getByTestId('blog').filter({ hasText: '运河边的早茶' }).click();
      await page.waitForURL(`${baseURL}${blogPath}`);
      await expect.poll(() => page.getByTestId('likers').textContent()).toBe('还没有人点赞');
      await page.getByTestId('like').click();
      await expect.poll(() => page.getByTestId('like').textContent()).toBe('♥ 1');
      await expect.poll(() => page.getByTestId('likers').textContent()).toMatch(/^user_/);
    });
  });

  it('signs in on the profile page: today marked on the calendar, streak 1', async () => {
    await withPage('sign-in', async (page) => {
      await logIn(page, '13912340004');
      await page.getByTestId('nav-me').click();
      await expect.poll(() => page.getByTestId('streak').textContent()).toBe('0');
      await expect(page.getByTestId('nickname').textContent()).resolves.toMatch(/^user_/); // the profile (and role) loaded
      await expect(page.getByTestId('to-admin').count()).resolves.toBe(0); // no admin link for a plain user
      await page.getByTestId('sign').click();
      await expect.poll(() => page.getByTestId('streak').textContent()).toBe('1');
      await expect.poll(() => page.getByTestId('signed-day').count()).toBe(1);
      await expect.poll(() => page.getByTestId('sign').textContent()).toBe('今日已签到');
    });
  });

  it('lets an administrator create a shop and a seckill voucher, watch its stock fall, pause, resume, restock, lower and end it, and read the audit', async () => {
    await withPage('admin', async (page) => {
      await logIn(page, ADMIN_PHONE);
      await page.getByTestId('nav-me').click();
      await page.getByTestId('to-admin').click(); // shown because /user/me says role admin
      await page.waitForURL(`${baseURL}/admin`);
      await page.getByTestId('shop-name-input').fill('管理测试店');
      await page.getByTestId('shop-address').fill('台州路1号');
      await page.getByTestId('create-shop').click();
      await page.getByTestId('no-sales').waitFor();
      const shopId = await page.getByTestId('voucher-shop').inputValue();
      expect(shopId).toMatch(/^\d+$/);
      expect(shopId).not.toBe('1');

      await page.getByTestId('voucher-title').fill('开业秒杀券');
      await page.getByTestId('voucher-stock').fill('5');
      await page.getByTestId('create-voucher').click();
      const sale = page.getByTestId('sale').filter({ hasText: '开业秒杀券' });
      await expect.poll(() => sale.getByTestId('sale-stock').textContent()).toBe('5');
      const voucherId = (await sale.textContent())!.match(/#(\d+)/)![1]!;

      // Three buyers through the API; the page reads the stock the order worker leaves in MySQL.
      for (const buyer of await createUsersWithSessions(env, 3, 15_100_000_000)) {
        const answer = await fetch(`${baseURL}/api/voucher-order/seckill/${voucherId}`, { method: 'POST', headers: { authorization: buyer.token } });
        expect((await answer.json()) as { success: boolean }).toMatchObject({ success: true });
      }
      await expect.poll(() => sale.getByTestId('sale-stock').textContent(), { timeout: 15_000 }).toBe('2');
      await expect.poll(() => sale.getByTestId('sale-rate').textContent()).toMatch(/^\d+\.\d$/);

      // Steer it: paused, a buyer is refused; resumed; the total raised to 10 leaves 7; the audit lists all three.
      await sale.getByTestId('sale-pause').click();
      await expect.poll(() => sale.getByTestId('sale-state').textContent()).toContain('已暂停');
      const [late] = await createUsersWithSessions(env, 1, 15_100_000_100);
      const refused = await fetch(`${baseURL}/api/voucher-order/seckill/${voucherId}`, { method: 'POST', headers: { authorization: late!.token } });
      expect((await refused.json()) as { success: boolean; errorMsg: string }).toMatchObject({ success: false, errorMsg: expect.stringMatching(/paused/) });
      await sale.getByTestId('sale-resume').click();
      await expect.poll(() => sale.getByTestId('sale-state').textContent()).toContain('在售');
      await sale.getByTestId('sale-total').fill('10');
      await sale.getByTestId('sale-set-total').click();
      await expect.poll(() => sale.getByTestId('sale-stock').textContent()).toBe('7');
      await sale.getByTestId('sale-audit').click();
      await expect.poll(() => sale.getByTestId('audit-entry').count()).toBe(3);
      await expect.poll(() => sale.getByTestId('audit-list').textContent()).toContain('5→10');

      // Lowered to 8 (3 sold) leaves 5; ended now, a buyer is told so; the open audit lists all five changes.
      // With the audit open, the list under the buttons re-lays out as the page polls the stock
      // every second: a pointer click can land beside the button, so these two are dispatched.
      await sale.getByTestId('sale-total').fill('8');
      await sale.getByTestId('sale-set-total').dispatchEvent('click');
      await expect.poll(() => sale.getByTestId('sale-stock').textContent()).toBe('5');
      await expect.poll(() => sale.getByTestId('audit-list').textContent()).toContain('10→8');
      await sale.getByTestId('sale-end').dispatchEvent('click');
      await expect.poll(() => sale.getByTestId('audit-entry').count()).toBe(5);
      const [afterEnd] = await createUsersWithSessions(env, 1, 15_100_000_200);
      const ended = await fetch(`${baseURL}/api/voucher-order/seckill/${voucherId}`, { method: 'POST', headers: { authorization: afterEnd!.token } });
      expect((await ended.json()) as { success: boolean; errorMsg: string }).toMatchObject({ success: false, errorMsg: expect.stringMatching(/ended/) });
      await page.getByTestId('monitor').scrollIntoViewIfNeeded(); // the live sale in the screenshot
    });
  });

  it('follows a blog author and sees their next blog in the feed', async () => {
    const [author] = await createUsersWithSessions(env, 1, 15_200_000_000);
    const post = async (title: string) => {
      const response = await fetch(`${baseURL}/api/blog`, {
        method: 'POST',
        headers: { authorization: author!.token, 'content-type': 'application/json' },
        body: JSON.stringify({ shopId: '1', title, content: '好吃' }),
      });
      return ((await response.json()) as { data: string }).data;
    };
    const first = await post('关注前的笔记');
    await withPage('feed', async (page) => {
      await logIn(page, '13912340005');
      await page.goto(`/blogs/${first}`);
      await expect.poll(() => page.getByTestId('follow').textContent()).toBe('关注');
      await page.getByTestId('follow').click();
      await expect.poll(() => page.getByTestId('follow').textContent()).toBe('已关注');
      await post('关注后的笔记'); // pushed to followers' inboxes
      await page.getByTestId('nav-feed').click();
      await expect.poll(() => page.getByTestId('feed-blog').allTextContents()).toEqual([expect.stringContaining('关注后的笔记')]);
      await expect.poll(() => page.getByTestId('feed-state').textContent()).toBe('没有更多了');
    });
  });
});
