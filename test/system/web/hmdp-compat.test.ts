import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_BLOGS, loadDemoContent } from '../../../src/cli/demo-content.js';
import { demoPicture } from '../../../src/infra/seed/demo-images.js';
import { loadDemoData } from '../../../src/infra/seed/load-demo-data.js';
import { launchBrowser, type TestBrowser } from '../../support/browser.js';
import { buildTestApp, createTestEnv, type InboxSmsSender, type TestEnv } from '../../support/test-env.js';

/**
 * HMDP_COMPAT as a user of the course's front end meets it: a page that talks like its pages
 * (axios, baseURL '/api', errorMsg read from 200s only) served by Debian's nginx with the course's
 * prefix-stripping rewrite in front of the app, driven in Chromium.
 */
const repo = fileURLToPath(new URL('../../..', import.meta.url));
let env: TestEnv;
let app: FastifyInstance;
let sms: InboxSmsSender;
let chrome: TestBrowser;
let page: Page;
let dir: string;
let nginx: string;
const PHONE = '13912345670';

/** Debian's nginx, installed with apt-get when missing (as scripts/topology.sh does). */
function ensureNginx(): string {
  const install = `as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
    command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null; }`;
  execFileSync('bash', ['-c', install], { stdio: 'inherit' });
  return spawnSync('bash', ['-c', 'command -v nginx || echo /usr/sbin/nginx'], { encoding: 'utf8' }).stdout.trim();
}

beforeAll(async () => {
  nginx = ensureNginx();
  dir = mkdtempSync(join(tmpdir(), 'hmdp-compat-nginx-'));
  const site = join(dir, 'site');
  mkdirSync(join(site, 'js'), { recursive: true });
  // As the course deploys it: uploads go into the imgs folder of the nginx root, which serves them.
  env = await createTestEnv({ HMDP_COMPAT: 'true', UPLOAD_DIR: join(site, 'imgs') });
  await loadDemoData(env.db);
  await loadDemoContent(env.db, env.redis, env.config.upload.dir);
  ({ app, sms } = await buildTestApp(env));
  const appUrl = new URL(await app.listen({ host: '127.0.0.1', port: 0 }));

  writeFileSync(join(site, 'index.html'), readFileSync(join(repo, 'test/system/web/fixtures/hmdp-pages/index.html')));
  copyFileSync(join(repo, 'node_modules/axios/dist/axios.min.js'), join(site, 'js/axios.min.js'));
  const port = appUrl.port;
  const listen = await freePort();
  const user = process.getuid?.() === 0 ? 'user root root;' : '';
  writeFileSync(
    join(dir, 'nginx.conf'),
    `${user}
daemon on;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 64; }
http {
  include /etc/nginx/mime.types;
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  server {
    listen 127.0.0.1:${listen};
    root ${site};
    # The course's nginx.conf, as it is:
    location /api {
      default_type application/json;
      keepalive_timeout 30s;
      keepalive_requests 1000;
      proxy_http_version 1.1;
      rewrite /api(/.*) $1 break;
      proxy_pass_request_headers on;
      proxy_next_upstream error timeout;
      proxy_pass http://127.0.0.1:${port};
    }
  }
}
`,
  );
  execFileSync(nginx, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')], { stdio: 'inherit' });
  chrome = await launchBrowser();
  ({ page } = await chrome.newPage(`http://127.0.0.1:${listen}`));
  await page.goto('/index.html');
}, 300_000);

afterAll(async () => {
  await chrome?.close();
  if (dir) {
    spawnSync(nginx, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log'), '-s', 'stop']);
    rmSync(dir, { recursive: true, force: true });
  }
  await app?.close();
  await env?.cleanup();
});

async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface Shown {
  ok: boolean;
  data?: unknown;
  message?: string;
}
type Pages = Record<string, (...args: unknown[]) => Promise<Shown>>;
const call = (name: string, ...args: unknown[]): Promise<Shown> =>
  page.evaluate(([fn, rest]) => (globalThis as unknown as { pages: Pages }).pages[fn]!(...rest), [name, args] as const);

describe('the course front end behind its nginx, HMDP_COMPAT=true', () => {
  it('shows the server refusal of a bad phone, then logs in with the code', async () => {
    const bad = await call('sendCode', '123');
    expect(bad.ok).toBe(false);
    expect(bad.message).not.toBe('服务器异常');
    expect(bad.message).toMatch(/phone/i);
    expect(await call('sendCode', PHONE)).toMatchObject({ ok: true });
    const wrong = await call('login', PHONE, '000000');
    expect(wrong.ok).toBe(false);
    expect(wrong.message).not.toBe('服务器异常');
    expect(await call('login', PHONE, sms.lastCodeFor(PHONE))).toMatchObject({ ok: true });
    expect(await call('me')).toMatchObject({ ok: true, data: { nickName: expect.any(String) } });
  });

  it('reads a shop, and shows why an unknown shop or following yourself is refused', async () => {
    expect(await call('shop', 1)).toMatchObject({ ok: true, data: { id: '1' } });
    const unknown = await call('shop', 987654);
    expect(unknown).toMatchObject({ ok: false });
    expect(unknown.message).not.toBe('服务器异常');
    const me = (await call('me')).data as { id: string };
    const self = await call('follow', me.id);
    expect(self.ok).toBe(false);
    expect(self.message).not.toBe('服务器异常');
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

  it('publishes from the editor with the pictures named as it shows them, and shows them at those names', async () => {
    const uploaded = await call('upload', [...demoPicture({ hue: 20, variant: 2, width: 24, height: 16 })]);
    const fileList = [`/imgs${String(uploaded.data)}`];
    const published = await call('publish', { title: '编辑器发布', content: '从 blog-edit.html 发布' }, fileList, '1');
    expect(published).toMatchObject({ ok: true, data: expect.any(String) });
    const blog = await call('blog', published.data);
    expect(blog).toMatchObject({ ok: true, data: { images: fileList.join(',') } });
    expect(await call('pictureWidth', fileList[0])).toEqual({ ok: true, data: 24 });
  });

  it('shows a refused publish to the editor, which then stays on the page', async () => {
    const theirs = '/imgs/blogs/1/1/00000000-0000-4000-8000-000000000001.png';
    const refused = await call('publish', { title: '别人的图片', content: '不是我上传的' }, [theirs], '1');
    expect(refused.ok).toBe(false);
    expect(refused.message).not.toBe('服务器异常');
    expect(refused.message).toContain('/upload/blog');
  });
});
