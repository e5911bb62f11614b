import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEdge, type Edge } from '../../../kit/edge.js';
import { loadDemoData } from '../../../src/infra/seed/load-demo-data.js';
import { launchBrowser, type TestBrowser } from '../../support/browser.js';
import { eventually } from '../../support/eventually.js';
import { buildTestApp, createTestEnv, type InboxSmsSender, type TestEnv } from '../../support/test-env.js';
import { courseSite, type CourseSite } from './course-nginx.js';
import {
  blogJourney,
  buySeckillJourney,
  courseFollowSelfJourney,
  courseLogInJourney,
  coursePagesOf,
  coursePublishJourney,
  courseReadShopsJourney,
  givePicturesToShop1,
  logInJourney,
  visitShopJourney,
  type WebSite,
} from './journeys.js';

/**
 * Both front ends through the edge (edge/nginx.conf.template + its Lua), once, in Chromium: the key
 * journeys of app.test.ts and hmdp-compat.test.ts (journeys.ts), with the edge where the app was.
 * Our web app from nginx's root (web/dist, as the topology serves it) and, in one visit, from the
 * app behind an edge without a root; the course's front end behind its own nginx, whose `/api`
 * location now proxies to the edge (HMDP_COMPAT: the edge answers the paths without `/api`). One
 * app serves all three. Each part checks in the edge's access log that the edge answered some of
 * the browser's reads itself, so the edge was really in the path.
 */
const WEB_DIST = fileURLToPath(new URL('../../../web/dist', import.meta.url));
const SCREENSHOTS = fileURLToPath(new URL('../../../test-results/screenshots/through-edge/', import.meta.url));

let course: CourseSite;
let env: TestEnv;
let app: FastifyInstance;
let sms: InboxSmsSender;
let chrome: TestBrowser;
/** The edge serving web/dist itself, in front of the app. */
let edge: Edge;
/** An edge without a root: the app serves the web front end behind it. */
let appServedEdge: Edge;
let site: WebSite;

beforeAll(async () => {
  course = courseSite();
  // Uploads in the course site's imgs folder, as the course keeps them: both front ends show them.
  // A generous request deadline, as app.test.ts: the pages' flows are under test, not the deadline.
  env = await createTestEnv({ HMDP_COMPAT: 'true', SECKILL_WORKER: 'true', REQUEST_DEADLINE_MS: '10000', UPLOAD_DIR: course.imgs });
  await loadDemoData(env.db);
  await givePicturesToShop1(env);
  ({ app, sms } = await buildTestApp(env));
  const appAddress = (await app.listen({ host: '127.0.0.1', port: 0 })).replace('http://', '');
  // Generous Redis and push bounds, for the same reason: a Redis command slowed past 100 ms by the
  // suite's load would send the edge's reads to the app for a second, and the browser's one read
  // of a shop with them (faults.test.ts tests those bounds).
  const reads = { redisTimeoutMs: 2_000, l1UnpushedTtlMs: 30_000 };
  [edge, appServedEdge] = await Promise.all([
    startEdge(env.config, { salePool: [appAddress], webRoot: WEB_DIST, reads }),
    startEdge(env.config, { salePool: [appAddress], reads }),
  ]);
  chrome = await launchBrowser();
  await mkdir(SCREENSHOTS, { recursive: true });
  site = { baseURL: edge.url, chrome, sms, env, screenshots: SCREENSHOTS };
}, 120_000);

afterAll(async () => {
  await chrome?.close();
  course?.stop();
  await edge?.stop();
  await appServedEdge?.stop();
  await app?.close();
  await env?.cleanup();
});

/**
 * The edge's access-log lines of the browser's GETs of `path` answered by the edge itself (the
 * line's last field L1 or L2; "-" when the app answered). The log is flushed every second.
 */
async function answeredAtEdge(at: Edge, path: string): Promise<string[]> {
  return eventually(async () => {
    const lines = (await readFile(join(at.prefix, 'logs/access.log'), 'utf8')).split('\n');
    const answered = lines.filter((line) => line.includes(`"GET ${path} HTTP/1.1"`) && line.includes('HeadlessChrome') && / L[12]$/.test(line));
    expect(answered.length, `GET ${path} answered at the edge`).toBeGreaterThan(0);
    return answered;
  }, 5_000);
}

/** Until the edge answers shop 1 and the type list itself (no X-Upstream): Redis holds them and the edge reads Redis. */
async function answersShopItself(at: Edge): Promise<void> {
  for (const path of ['/api/shop/1', '/api/shop-type/list'])
    await eventually(async () => expect((await fetch(`${at.url}${path}`)).headers.get('x-upstream')).toBeNull());
}

describe('our web app through the edge, served from nginx’s root (web/dist)', () => {
  it('serves the pages from web/dist and the visitor’s reads at the edge', async () => {
    const page = await fetch(`${edge.url}/shops/1`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="app">');
    // nginx's root, not the app: the app names every answer with an x-request-id.
    expect(page.headers.get('x-request-id')).toBeNull();
    expect(page.headers.get('cache-control')).toBe('no-cache');
    // Redis filled by a first read (the app answers and caches): the browser's are answered from it.
    for (const path of ['/api/shop/1', '/api/shop-type/list']) expect((await fetch(`${edge.url}${path}`)).status).toBe(200);
    await answersShopItself(edge);
    await visitShopJourney(site);
    expect((await answeredAtEdge(edge, '/api/shop/1')).length).toBeGreaterThan(0);
    expect((await answeredAtEdge(edge, '/api/shop-type/list')).length).toBeGreaterThan(0);
  });

  it('logs in with the phone and the SMS code', () => logInJourney(site, '13912345678'));

  it('buys the seckill voucher: queued, then created, shown in my orders, paid; a second buy is refused', () => buySeckillJourney(site, '13912340000'));

  it('writes a blog with an image; another user finds it among the hot blogs and likes it', () => blogJourney(site, ['13912340002', '13912340003']));
});

describe('our web app through the edge, served by the app', () => {
  it('serves the pages from the app and the visitor’s reads at the edge', async () => {
    const page = await fetch(`${appServedEdge.url}/shops/1`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="app">');
    expect(page.headers.get('x-request-id')).not.toBeNull(); // the app's answer
    // Redis holds the shop since the visits above: this edge answers it (once any back-off after a
    // slow Redis command under the suite's load has passed).
    await answersShopItself(appServedEdge);
    await visitShopJourney({ ...site, baseURL: appServedEdge.url });
    expect((await answeredAtEdge(appServedEdge, '/api/shop/1')).length).toBeGreaterThan(0);
  });
});

describe('the course’s front end (HMDP_COMPAT) behind its nginx, through the edge', () => {
  it('reads shops (at the edge once Redis holds them), logs in, is refused following itself, publishes a blog', async () => {
    const { page } = await chrome.newPage(await course.start(`127.0.0.1:${edge.port}`));
    await page.goto('/index.html');
    const call = coursePagesOf(page);
    // Before the login: no token, so the edge may answer. Redis holds shop 1 since the visits
    // above: the edge answers it on the compat path (the unknown shop goes to the app, whose Bloom
    // filter refuses it without a record).
    await courseReadShopsJourney(call);
    expect((await answeredAtEdge(edge, '/shop/1')).length).toBeGreaterThan(0);
    await courseLogInJourney(call, sms, '13912345670');
    await courseFollowSelfJourney(call);
    await coursePublishJourney(call);
  });
});
