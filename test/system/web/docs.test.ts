import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../../support/browser.js';
import { buildTestApp, createTestEnv, type TestEnv } from '../../support/test-env.js';

/** Swagger UI at /docs in Debian's Chromium: it renders every /api operation from the app alone. */

let env: TestEnv;
let app: FastifyInstance;
let baseURL: string;
let chrome: TestBrowser;

beforeAll(async () => {
  env = await createTestEnv();
  ({ app } = await buildTestApp(env));
  baseURL = await app.listen({ host: '127.0.0.1', port: 0 });
  chrome = await launchBrowser();
});

afterAll(async () => {
  await chrome?.close();
  await app?.close();
  await env?.cleanup();
});

describe('Swagger UI', () => {
  it('shows every /api operation and runs one, loading nothing from another host', async () => {
    const { context, page, errors } = await chrome.newPage(baseURL);
    const foreign: string[] = [];
    // Anything not served by the app is refused, so a CDN dependency would show as a failure.
    await context.route('**/*', (route) => {
      const url = new URL(route.request().url());
      if (url.origin === new URL(baseURL).origin || url.protocol === 'data:') return route.continue();
      foreign.push(url.href);
      return route.abort();
    });
    try {
      await page.goto('/docs');
      const operations = app.routeTable.filter((route) => route.url.startsWith('/api/')).length;
      await expect.poll(() => page.locator('.opblock').count(), { timeout: 15_000 }).toBe(operations);
      // Padlocks on the routes that need a login; "Authorize" for the session token.
      expect(await page.locator('.opblock .authorization__btn').count()).toBeGreaterThan(10);
      await expect.poll(() => page.locator('.btn.authorize').count()).toBe(1);

      const health = page.locator('#operations-health-get_api_health');
      await health.locator('.opblock-summary').click();
      await health.locator('.try-out__btn').click();
      await health.locator('.execute').click();
      await expect.poll(() => health.locator('.live-responses-table tbody .response-col_status').first().textContent(), { timeout: 10_000 }).toContain('200');
      expect(await health.locator('.live-responses-table .microlight').first().textContent()).toContain('"status": "up"');
    } finally {
      await context.close();
    }
    expect(foreign).toEqual([]);
    expect(errors).toEqual([]);
  });
});
