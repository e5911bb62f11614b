import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';

/** Debian's Chromium (scripts/browser.sh installs it); never a browser downloaded by Playwright. */
export const CHROMIUM = '/usr/bin/chromium';

export interface TestBrowser {
  browser: Browser;
  /** A fresh context (own sessionStorage/localStorage) and page that records console errors. */
  newPage(baseURL: string, options?: { mobile?: boolean; context?: BrowserContextOptions }): Promise<{ context: BrowserContext; page: Page; errors: string[] }>;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<TestBrowser> {
  // Playwright starts Chromium with a fresh temporary --user-data-dir of its own (it refuses the
  // flag in `args`) and deletes it on close: no profile is shared between runs.
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    browser,
    async newPage(baseURL, options = {}) {
      const context = await browser.newContext({
        baseURL,
        ...(options.mobile ? { viewport: { width: 390, height: 780 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true } : {}),
        ...options.context, // e.g. permissions: ['geolocation'], geolocation: {latitude, longitude}
      });
      context.setDefaultTimeout(10_000);
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error') errors.push(`console: ${message.text()}`);
      });
      page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`));
      return { context, page, errors };
    },
    async close() {
      await browser.close();
    },
  };
}
