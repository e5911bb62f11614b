import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_BLOGS, DEMO_FOLLOWS, loadDemoContent } from '../../../src/cli/demo-content.js';
import { loadDemoData } from '../../../src/infra/seed/load-demo-data.js';
import { launchBrowser, type TestBrowser } from '../../support/browser.js';
import { buildTestApp, createTestEnv, sessionOf, type TestEnv } from '../../support/test-env.js';

/**
 * The web app's pictures in Chromium on a phone-sized screen, over the demo data as `npm run seed`
 * loads it (shop photos, blog pictures): each shown picture really loads, is sized before it
 * loads, and a missing or broken one shows the placeholder.
 */
const SCREENSHOTS = fileURLToPath(
  new URL(process.env.UPDATE_SCREENSHOTS === '1' ? '../../../docs/screenshots/' : '../../../test-results/screenshots/', import.meta.url),
);
const PHONE_SCREEN = { viewport: { width: 390, height: 844 } };
/** The demo blog whose pictures are gone from the disk, and the demo shop that has none. */
const BROKEN_BLOG = '4'; // by a user nobody follows: in no feed
let shopWithout = '';
let env: TestEnv;
let app: FastifyInstance;
let baseURL: string;
let chrome: TestBrowser;

beforeAll(async () => {
  env = await createTestEnv();
  await loadDemoData(env.db);
  await loadDemoContent(env.db, env.redis, env.config.upload.dir);
  await env.db.updateTable('tb_blog').set({ images: '/imgs/blogs/0/0/gone.png' }).where('id', '=', BROKEN_BLOG).execute();
  ({ app } = await buildTestApp(env));
  // The second nearest restaurant loses its pictures (the list reads MySQL, no cache in between).
  const nearest = (await app.inject({ url: '/api/shop/of/type?typeId=1&current=1&x=120.149993&y=30.334229' })).json<{ data: Array<{ id: string }> }>().data;
  shopWithout = nearest[1]!.id;
  await env.db.updateTable('tb_shop').set({ images: '' }).where('id', '=', shopWithout).execute();
  baseURL = await app.listen({ host: '127.0.0.1', port: 0 });
  chrome = await launchBrowser();
  await mkdir(SCREENSHOTS, { recursive: true });
});

afterAll(async () => {
  await chrome?.close();
  await app?.close();
  await env?.cleanup();
});

async function withPage(screenshot: string, steps: (page: Page) => Promise<void>, options: { userId?: string; brokenPictures?: boolean } = {}) {
  const { context, page, errors } = await chrome.newPage(baseURL, { mobile: true, context: PHONE_SCREEN });
  try {
    if (options.userId) {
      const token = (await sessionOf(env, options.userId)).authorization;
      await context.addInitScript(
        (value) => (globalThis as unknown as { sessionStorage: { setItem(key: string, value: string): void } }).sessionStorage.setItem('token', value),
        token,
      );
    }
    await steps(page);
    await page.screenshot({ path: `${SCREENSHOTS}${screenshot}.png` });
    // A broken picture is the only error the browser may report (its 404).
    expect(errors.filter((error) => !(options.brokenPictures === true && /status of 404/.test(error)))).toEqual([]);
  } finally {
    await context.close();
  }
}

interface ShownPicture {
  naturalWidth: number;
  loading: string;
  scrollIntoView(): void;
}

/**
 * Waits until every picture in `scope` has loaded (naturalWidth > 0), scrolling to the first one
 * still pending each time (they load lazily, as they come near the screen); returns how many
 * there are, each lazy.
 */
async function expectLoaded(scope: Locator): Promise<number> {
  const pictures = scope.getByTestId('picture');
  const pending = () =>
    pictures.evaluateAll((imgs) => {
      const waiting = (imgs as unknown as ShownPicture[]).filter((img) => img.naturalWidth === 0);
      waiting[0]?.scrollIntoView();
      return waiting.length;
    });
  await expect.poll(pending).toBe(0);
  const loading = await pictures.evaluateAll((imgs) => (imgs as unknown as ShownPicture[]).map((img) => img.loading));
  expect(loading.every((value) => value === 'lazy')).toBe(true);
  return loading.length;
}

describe('pictures in the web app', () => {
  it('shows the hot blogs as a two-column waterfall of covers, sized before they load, a placeholder for a broken one', async () => {
    await withPage(
      'home',
      async (page) => {
        // Held until the covers' boxes are measured: a cover that loads must not move anything.
        let release = () => {};
        const held = new Promise<void>((resolve) => (release = resolve));
        await page.route('**/imgs/**', async (route) => {
          await held;
          await route.continue();
        });
        await page.goto('/');
        const cards = page.getByTestId('blog');
        await expect.poll(() => cards.count()).toBe(DEMO_BLOGS.length);
        await page.getByTestId('types').waitFor(); // the shop types above them are in place too
        const boxes = async () => Promise.all((await cards.all()).map((card) => card.boundingBox()));
        const before = await boxes();
        expect(new Set(before.map((box) => box!.x)).size).toBe(2);
        expect(before.every((box) => box!.height > 100)).toBe(true);
        release();
        // Every cover loads, but the broken one, which gives way to the placeholder.
        expect(await expectLoaded(page.getByTestId('blogs'))).toBe(DEMO_BLOGS.length - 1);
        await page.evaluate(() => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0));
        expect(await boxes()).toEqual(before);
        const broken = cards.filter({ has: page.getByTestId('picture-missing') });
        expect(await broken.count()).toBe(1);
        await expect(broken.getAttribute('href')).resolves.toBe(`/blogs/${BROKEN_BLOG}`);
      },
      { brokenPictures: true },
    );
  });

  it('shows a photo for each shop of the list, a placeholder for the shop without one, and the gallery on the shop page', async () => {
    await withPage('shop-photos', async (page) => {
      await page.goto('/shops/type/1');
      const shops = page.getByTestId('shop');
      await page.getByTestId('list-state').scrollIntoViewIfNeeded(); // every page of the list
      await expect.poll(() => page.getByTestId('list-state').textContent()).toContain('没有更多了');
      const listed = await shops.count();
      expect(listed).toBeGreaterThan(5);
      await expect.poll(() => page.locator(`[data-testid=shop][href="/shops/${shopWithout}"]`).getByTestId('picture-missing').count()).toBe(1);
      expect(await expectLoaded(page.getByTestId('shops'))).toBe(listed - 1);
      await page.evaluate(() => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0));

      await shops.first().click();
      await page.waitForURL(/\/shops\/\d+$/);
      await expect.poll(() => page.getByTestId('shop-photos').getByTestId('picture').count()).toBe(3);
      expect(await expectLoaded(page.getByTestId('shop-photos'))).toBe(3);
    });
  });

  it('shows every picture of a blog on its page, and the covers of the feed', async () => {
    const blog = DEMO_BLOGS.find((candidate) => candidate.images === 3)!;
    const follower = DEMO_FOLLOWS.find(([, followee]) => followee === blog.user_id)![0];
    await withPage(
      'feed-covers',
      async (page) => {
        await page.goto(`/blogs/${blog.id}`);
        await expect.poll(() => page.getByTestId('blog-pictures').getByTestId('picture').count()).toBe(3);
        expect(await expectLoaded(page.getByTestId('blog-pictures'))).toBe(3);

        await page.goto('/feed');
        await expect.poll(() => page.getByTestId('feed-state').textContent()).toBe('没有更多了');
        const entries = await page.getByTestId('feed-blog').count();
        expect(entries).toBeGreaterThan(0);
        expect(await expectLoaded(page.getByTestId('feed'))).toBe(entries);
      },
      { userId: follower },
    );
  });
});
