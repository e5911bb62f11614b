import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/app.js';
import { loadConfig, type Config } from '../../../src/infra/config.js';
import { findLeaks } from '../../support/app-logs.js';
import { buildTestApp, createTestEnv, sessionOf, type TestEnv } from '../../support/test-env.js';

/** Security headers, CORS, body limit, timeouts and what the logs may contain (issue #10). */
let env: TestEnv;
let app: FastifyInstance;
let corsApp: FastifyInstance;
let loggedApp: FastifyInstance;
const logLines: string[] = [];

beforeAll(async () => {
  env = await createTestEnv();
  ({ app } = await buildTestApp(env));
  const corsConfig: Config = { ...env.config, http: { ...env.config.http, corsOrigins: ['https://shop.example.com'] } };
  ({ app: corsApp } = await buildTestApp({ ...env, config: corsConfig }));
  // The default (logging) SMS sender of development, which logs the code, and a logger writing
  // JSON lines here, at info level (outside development the code is never logged: abuse/login-codes.test.ts).
  loggedApp = await buildApp({
    config: { ...env.config, nodeEnv: 'development', requestLog: { lines: 'all', slowMs: env.config.requestLog.slowMs } },
    redis: env.redis,
    db: env.db,
    logger: { level: 'info', stream: { write: (line: string) => logLines.push(line) } },
  });
  await loggedApp.ready();
});

afterAll(async () => {
  await Promise.all([app, corsApp, loggedApp].map((instance) => instance?.close()));
  await env?.cleanup();
});

describe('security headers (computed once by helmet)', () => {
  it('sends them on API answers and a CSP the built front end works with', async () => {
    const response = await app.inject({ url: '/api/health' });
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    expect(response.headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(response.headers['referrer-policy']).toBe('no-referrer');
    expect(response.headers['cross-origin-opener-policy']).toBe('same-origin');
    const csp = String(response.headers['content-security-policy']);
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('upgrade-insecure-requests');
    // Errors get them too.
    expect((await app.inject({ url: '/api/nowhere' })).headers['x-content-type-options']).toBe('nosniff');
  });
});

describe('CORS (CORS_ORIGINS)', () => {
  it('allows a configured origin, preflight included', async () => {
    const simple = await corsApp.inject({ url: '/api/health', headers: { origin: 'https://shop.example.com' } });
    expect(simple.headers['access-control-allow-origin']).toBe('https://shop.example.com');
    const preflight = await corsApp.inject({
      method: 'OPTIONS',
      url: '/api/voucher-order/seckill/1',
      headers: { origin: 'https://shop.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization' },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('https://shop.example.com');
    expect(String(preflight.headers['access-control-allow-headers'])).toContain('authorization');
  });

  it('gives no CORS header to another origin, nor to any origin by default', async () => {
    const denied = await corsApp.inject({ url: '/api/health', headers: { origin: 'https://evil.example.com' } });
    expect(denied.headers['access-control-allow-origin']).toBeUndefined();
    const byDefault = await app.inject({ url: '/api/health', headers: { origin: 'https://shop.example.com' } });
    expect(byDefault.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('body size and timeouts', () => {
  it('answers 413 in the API shape to a body over BODY_LIMIT_BYTES', async () => {
    const huge = JSON.stringify({ phone: '13800000000', code: '123456', password: 'x'.repeat(env.config.http.bodyLimitBytes) });
    const response = await app.inject({ method: 'POST', url: '/api/user/login', headers: { 'content-type': 'application/json' }, payload: huge });
    expect(response.statusCode).toBe(413);
    expect(response.json()).toEqual({ success: false, errorMsg: expect.stringContaining('body') });
  });

  it('applies the configured timeouts to the server', async () => {
    expect(app.server.requestTimeout).toBe(env.config.http.requestTimeoutMs);
    // Slow headers are bounded by the request timeout as well (issue #17; slow bodies: abuse/slow-requests.test.ts).
    expect(app.server.headersTimeout).toBe(Math.min(60_000, env.config.http.requestTimeoutMs));
    expect(app.server.keepAliveTimeout).toBe(env.config.http.keepAliveTimeoutMs);
    expect(app.server.timeout).toBe(env.config.http.connectionTimeoutMs);
    expect(() => loadConfig({ HTTP_KEEP_ALIVE_TIMEOUT_MS: '90000', HTTP_CONNECTION_TIMEOUT_MS: '60000' })).toThrow(/HTTP_CONNECTION_TIMEOUT_MS/);
  });

  it("keeps Node's header timeout when the request timeout is off (HTTP_REQUEST_TIMEOUT_MS=0)", async () => {
    const { app: untimed } = await buildTestApp({ ...env, config: { ...env.config, http: { ...env.config.http, requestTimeoutMs: 0 } } });
    try {
      expect(untimed.server.requestTimeout).toBe(0);
      expect(untimed.server.headersTimeout).toBe(60_000);
    } finally {
      await untimed.close();
    }
  });
});

describe('logs', () => {
  it('never contain a session token and show phone numbers masked, while the dev SMS line still gives the code', async () => {
    const phone = '13812345678';
    expect((await loggedApp.inject({ method: 'POST', url: `/api/user/code?phone=${phone}` })).statusCode).toBe(200);
    const smsLine = logLines
      .map((line) => JSON.parse(line) as { msg?: string; code?: string; phone?: string })
      .find((entry) => entry.msg?.startsWith('login code for'));
    expect(smsLine?.msg).toMatch(/^login code for 138\*\*\*\*5678: \d{6}$/);
    expect(smsLine?.phone).toBe('138****5678');

    const login = await loggedApp.inject({ method: 'POST', url: '/api/user/login', payload: { phone, code: smsLine!.code } });
    const token = login.json().data as string;
    expect(token).toMatch(/^[\w-]{40,}$/);
    expect((await loggedApp.inject({ url: '/api/user/me', headers: { authorization: `Bearer ${token}` } })).statusCode).toBe(200);
    // Anything that logs a token or an authorization header by mistake is redacted too.
    loggedApp.log.info({ token, headers: { authorization: token }, user: { phone, token } }, 'careless line');

    const text = logLines.join('');
    expect(text).toContain('/api/user/code?phone=138****5678'); // the request line
    expect(text).toContain('careless line');
    expect(text).not.toContain(token);
    expect(text).not.toContain(phone);
    // Request ids on every request line (structured JSON).
    const requestLines = logLines.map((line) => JSON.parse(line) as { reqId?: string; msg?: string }).filter((entry) => entry.msg === 'request completed');
    expect(requestLines.length).toBeGreaterThanOrEqual(3);
    expect(requestLines.every((entry) => typeof entry.reqId === 'string' && entry.reqId.length > 0)).toBe(true);
  });

  it('mask phones in every written form and redact tokens sent in the query, in request lines, messages and errors (issue #17)', async () => {
    const from = logLines.length;
    const { authorization: token } = await sessionOf(env, '1');
    const phones = ['8613912345678', '+8613912345678', '008613912345678', '139-1234-5678', '139 1234 5678', '+86 139 1234 5678'];
    for (const phone of phones) {
      // In a URL (encoded), in a refused query, and in a message and a field of any name.
      await loggedApp.inject({ method: 'POST', url: `/api/user/code?phone=${encodeURIComponent(phone)}` });
      await loggedApp.inject({ url: `/api/shop/of/name?name=${encodeURIComponent(phone)}` });
      loggedApp.log.info({ contact: phone, err: new Error(`no account for ${phone}`) }, `lookup of ${phone}`);
    }
    await loggedApp.inject({ url: `/api/user/me?token=${token}`, headers: { authorization: token } });
    await loggedApp.inject({ url: `/api/blog/hot?access_token=${token}&current=1` });
    const text = logLines.slice(from).join('');
    expect(text).toContain('lookup of');
    expect(text).toContain('139****5678');
    expect(text).toContain('token=[Redacted]');
    for (const phone of phones) expect(text).not.toContain(phone);
    expect(text).not.toContain(token);
    expect(findLeaks(text)).toEqual([]);
  });
});
