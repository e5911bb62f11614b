import type { FastifyInstance } from 'fastify';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_BLOGS, loadDemoContent } from '../../../src/cli/demo-content.js';
import { demoPicture } from '../../../src/infra/seed/demo-images.js';
import { loadDemoData } from '../../../src/infra/seed/load-demo-data.js';
import { launchBrowser, type TestBrowser } from '../../support/browser.js';
import { buildTestApp, createTestEnv, type InboxSmsSender, type TestEnv } from '../../support/test-env.js';
import { courseSite, type CourseSite } from './course-nginx.js';
import { courseFollowSelfJourney, courseLogInJourney, coursePagesOf, coursePublishJourney, courseReadShopsJourney, type CoursePages } from './journeys.js';

/**
 * HMDP_COMPAT as a user of the course's front end meets it: a page that talks like its pages
 * (axios, baseURL '/api', errorMsg read from 200s only) served by Debian's nginx with the course's
 * prefix-stripping rewrite in front of the app, driven in Chromium (through-edge.test.ts runs the
 * same journeys with the edge between that nginx and the app).
 */
let env: TestEnv;
let app: FastifyInstance;
let sms: InboxSmsSender;
let chrome: TestBrowser;
let page: Page;
let call: CoursePages;
let course: CourseSite;
const PHONE = '13912345670';

beforeAll(async () => {
  course = courseSite();
  // As the course deploys it: uploads go into the imgs folder of the nginx root, which serves them.
  env = await createTestEnv({ HMDP_COMPAT: 'true', UPLOAD_DIR: course.imgs });
  await loadDemoData(env.db);
  await loadDemoContent(env.db, env.redis, env.config.upload.dir);
  ({ app, sms } = await buildTestApp(env));
  const appUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  const site = await course.start(appUrl.replace('http://', ''));
  chrome = await launchBrowser();
  ({ page } = await chrome.newPage(site));
  call = coursePagesOf(page);
  await page.goto('/index.html');
}, 300_000);

afterAll(async () => {
  await chrome?.close();
  course?.stop();
  await app?.close();
  await env?.cleanup();
});

describe('the course front end behind its nginx, HMDP_COMPAT=true', () => {
  it('shows the server refusal of a bad phone, then logs in with the code', () => courseLogInJourney(call, sms, PHONE));

  it('reads a shop, and shows why an unknown shop or following yourself is refused', async () => {
    await courseReadShopsJourney(call);
    await courseFollowSelfJourney(call);
  });

  it("shows the demo data's blog and shop pictures as its pages do, straight from the nginx root", async () => {
    const shown = (await call('pictures')).data as Array<{ src: string; naturalWidth: number }>;
    const blogPictures = shown.filter((picture) => picture.src.includes('/blogs/'));
    expect(blogPictures.length).toBe(DEMO_BLOGS.reduce((sum, blog) => sum + blog.images, 0));
    expect(shown.filter((picture) => picture.src.includes('/shops/')).length).toBeGreaterThan(0);
    expect(shown.filter((picture) => picture.naturalWidth === 0).map((picture) => picture.src)).toEqual([]);
  });

  it('uploads a picture and deletes it by its /imgs name, as blog-edit.html does', async () => {
    const uploaded = await call('upload', [...demoPicture({ hue: 200, variant: 1, width: 16, height: 16 })]);
    expect(uploaded).toMatchObject({ ok: true });
    const name = uploaded.data as string;
    expect(name).toMatch(/^\/blogs\//);
    expect(await call('deleteImage', name)).toMatchObject({ ok: true });
    expect(await env.db.selectFrom('tb_upload').select('name').where('name', '=', name).executeTakeFirst()).toBeUndefined();
  });

  it('publishes from the editor with the pictures named as it shows them, and shows them at those names', () => coursePublishJourney(call));

  it('shows a refused publish to the editor, which then stays on the page', async () => {
    const theirs = '/imgs/blogs/1/1/00000000-0000-4000-8000-000000000001.png';
    const refused = await call('publish', { title: '别人的图片', content: '不是我上传的' }, [theirs], '1');
    expect(refused.ok).toBe(false);
    expect(refused.message).not.toBe('服务器异常');
    expect(refused.message).toContain('/upload/blog');
  });
});
