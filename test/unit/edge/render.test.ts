import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { answerHeaderLines, DEFAULT_READS, edgeSettings, renderTemplate, writeEdge } from '../../../src/cli/edge-render.js';
import { loadConfig } from '../../../src/infra/config.js';

/** What the edge takes from the app's configuration, and the template's rendering (no nginx needed). */
const config = (env: Record<string, string> = {}) => loadConfig({ NODE_ENV: 'test', ...env });

describe('renderTemplate', () => {
  it('fills values, keeps sections that are on (#) or off (^), and refuses a name it has no value for', () => {
    const template = 'a {{x}}\n{{#on}}\nkept {{x}}\n{{^off}}\ninner\n{{/off}}\n{{/on}}\n{{#off}}\ndropped\n{{/off}}\n{{^on}}\ndropped too\n{{/on}}\nend\n';
    expect(renderTemplate(template, { x: '1', on: true, off: '' })).toBe('a 1\nkept 1\ninner\nend\n');
    expect(() => renderTemplate('{{missing}}', {})).toThrow(/no value for \{\{missing\}\}/);
  });
});

describe('answerHeaderLines', () => {
  it("writes the app's headers and the request id as add_header lines, always, and refuses a value nginx would misread", () => {
    const lines = answerHeaderLines({ 'x-frame-options': 'SAMEORIGIN', 'content-security-policy': "default-src 'self';base-uri 'self'" });
    expect(lines.split('\n').filter((line) => !line.startsWith('#'))).toEqual([
      'add_header x-frame-options "SAMEORIGIN" always;',
      "add_header content-security-policy \"default-src 'self';base-uri 'self'\" always;",
      'add_header x-request-id $hmdp_request_id always;',
      '',
    ]);
    for (const value of ['a$b', 'a"b', 'a\\b', 'a\nb', 'a\u00e9b']) expect(() => answerHeaderLines({ 'x-a': value })).toThrow(/cannot be written/);
    expect(() => answerHeaderLines({ 'x a': 'b' })).toThrow(/cannot be written/);
  });
});

describe('edgeSettings', () => {
  it("reads the app's standalone Redis, prefix, language, headers and message texts", async () => {
    const settings = await edgeSettings(
      config({ REDIS_URL: 'redis://user:p%40ss@10.0.0.5:6380/2', REDIS_KEY_PREFIX: 'p:', DEFAULT_LANGUAGE: 'en' }),
      DEFAULT_READS,
    );
    expect(settings.reads).toBe(true);
    expect(settings.redis).toMatchObject({ host: '10.0.0.5', port: 6380, db: 2, username: 'user', password: 'p@ss' });
    expect(settings).toMatchObject({ keyPrefix: 'p:', defaultLanguage: 'en', passOrigin: false });
    expect(settings.headers['content-security-policy']).toContain("default-src 'self'");
    expect(settings.headers.vary).toBeUndefined();
    // The 404 of a missing shop around its id, JSON-escaped as the app's JSON.stringify writes it.
    expect(settings.messages.shopNotFound.zh).toEqual(['{"success":false,"errorMsg":"店铺不存在（', '）"}']);
    expect(settings.messages.shopNotFound.en.join('7')).toBe('{"success":false,"errorMsg":"Shop 7 not found"}');
  });

  it("adds CORS' headers when the app has origins, and passes requests with an Origin to the app", async () => {
    const settings = await edgeSettings(config({ CORS_ORIGINS: 'https://shop.example.com' }), DEFAULT_READS);
    expect(settings.passOrigin).toBe(true);
    expect(settings.headers).toMatchObject({ vary: 'Origin', 'access-control-expose-headers': 'retry-after, x-request-id' });
  });

  it("reads a Redis Cluster from the app's seed nodes", async () => {
    const settings = await edgeSettings(config({ REDIS_CLUSTER_NODES: '127.0.0.1:7001,10.0.0.6:7002' }), DEFAULT_READS);
    expect(settings.reads).toBe(true);
    expect(settings.redis).toMatchObject({
      cluster: [
        { host: '127.0.0.1', port: 7001 },
        { host: '10.0.0.6', port: 7002 },
      ],
    });
  });

  it('answers no reads where it cannot answer as the app: TLS, the API rate limit, reads off', async () => {
    expect((await edgeSettings(config({ REDIS_URL: 'rediss://127.0.0.1:6379' }), DEFAULT_READS)).reads).toBe(false);
    expect((await edgeSettings(config({ API_RATE_LIMIT_PER_IP: '100' }), DEFAULT_READS)).reads).toBe(false);
    expect((await edgeSettings(config(), { ...DEFAULT_READS, enabled: false })).reads).toBe(false);
  });
});

describe('writeEdge', () => {
  it("writes nginx.conf with Debian's Lua modules, the settings for the master only, the answers' headers and the 429 pages", async () => {
    const prefix = await mkdtemp(join(tmpdir(), 'hmdp-edge-render-'));
    try {
      const options = {
        prefix,
        listen: '127.0.0.1:8080',
        salePool: ['127.0.0.1:8091'],
        sitePool: ['127.0.0.1:8093'],
        orderRate: 5,
        orderBurst: 10,
        saleConn: 16,
        exempt: ['127.0.0.1'],
        reads: DEFAULT_READS,
      };
      const conf = await readFile(await writeEdge(config(), options), 'utf8');
      expect(conf.indexOf('ndk_http_module.so')).toBeLessThan(conf.indexOf('ngx_http_lua_module.so'));
      expect(conf).toContain('/usr/share/lua/5.1/?.lua');
      expect(conf).toContain('server 127.0.0.1:8093 max_fails=1 fail_timeout=2s;');
      expect(conf).toContain('require("hmdp.edge.routes").shop(false)');
      expect(conf).not.toContain('shop(true)'); // no compat surface without HMDP_COMPAT
      expect(conf).not.toMatch(/\{\{|\}\}/);
      expect((await stat(join(prefix, 'edge-settings.json'))).mode & 0o777).toBe(0o600);
      expect(JSON.parse(await readFile(join(prefix, 'pages/429.en.json'), 'utf8'))).toMatchObject({ success: false });
      // What nginx sends itself (L1's reads, the sale's refusals) carries the app's headers.
      expect(conf).toContain('/l1-answers.conf;');
      expect(await readFile(join(prefix, 'answer-headers.conf'), 'utf8')).toMatch(/^add_header content-security-policy ".+" always;$/m);

      const compat = await readFile(await writeEdge(config({ HMDP_COMPAT: 'true' }), options), 'utf8');
      // The compat reads come before the compat catch-all: nginx tries regex locations in order.
      expect(compat.indexOf('shop(true)')).toBeLessThan(compat.indexOf('location ~ ^/(user|shop|'));
      const off = await readFile(await writeEdge(config({ REDIS_URL: 'rediss://127.0.0.1:6379' }), options), 'utf8');
      expect(off).not.toContain('hmdp.edge.routes');
    } finally {
      await rm(prefix, { recursive: true, force: true });
    }
  });
});
