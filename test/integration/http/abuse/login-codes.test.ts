import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../../../src/app.js';
import { ConfigError, loadConfig, type Config } from '../../../../src/infra/config.js';
import { createMetrics, type Metrics } from '../../../../src/infra/metrics.js';
import { createSmsSender, HttpSmsSender, LogSmsSender } from '../../../../src/modules/users/sms-sender.js';
import { createTestEnv, type TestEnv } from '../../../support/test-env.js';

/**
 * Login codes never reach a log outside development, and a real SMS gateway sits behind the
 * SmsSender interface (issue 17 item 2). A local HTTP server stands in for the gateway.
 */

type GatewayMode = 'ok' | 'fail' | 'hang';
interface GatewayRequest {
  headers: IncomingMessage['headers'];
  body: { phone: string; message: string };
}

let env: TestEnv;
let gateway: Server;
let gatewayUrl: string;
let mode: GatewayMode = 'ok';
const received: GatewayRequest[] = [];
const hanging: ServerResponse[] = [];
let app: FastifyInstance;
let metrics: Metrics;
const logLines: string[] = [];

const TOKEN = 'Bearer gateway-secret-7f3a';

async function startGateway(): Promise<void> {
  gateway = createServer((request, response) => {
    let text = '';
    request.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
    request.on('end', () => {
      received.push({ headers: request.headers, body: JSON.parse(text) as GatewayRequest['body'] });
      if (mode === 'hang') hanging.push(response);
      else response.writeHead(mode === 'ok' ? 202 : 500, { 'content-type': 'application/json' }).end(text); // echoes the code, as some gateways do
    });
  });
  gateway.listen(0, '127.0.0.1');
  await once(gateway, 'listening');
  gatewayUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}/sms/send`;
}

beforeAll(async () => {
  await startGateway();
  env = await createTestEnv({
    SMS_SENDER: 'http',
    SMS_HTTP_URL: gatewayUrl,
    SMS_HTTP_AUTH_TOKEN: TOKEN,
    SMS_HTTP_TIMEOUT_MS: '300',
    SMS_INTERVAL_SECONDS: '0',
  });
  metrics = createMetrics();
  // No `sms`: the app builds the sender SMS_SENDER chooses. Logs at info level, kept here.
  app = await buildApp({
    config: env.config,
    redis: env.redis,
    db: env.db,
    metrics,
    logger: { level: 'info', stream: { write: (line: string) => logLines.push(line) } },
  });
  await app.ready();
});

afterAll(async () => {
  for (const response of hanging) response.destroy();
  gateway?.closeAllConnections();
  gateway?.close();
  await app?.close();
  await env?.cleanup();
});

beforeEach(() => {
  mode = 'ok';
  received.length = 0;
});

const requestCode = (phone: string) => app.inject({ method: 'POST', url: `/api/user/code?phone=${phone}` });
const login = (phone: string, code: string) => app.inject({ method: 'POST', url: '/api/user/login', payload: { phone, code } });
const codeIn = (request: GatewayRequest | undefined): string => /\b(\d{6})\b/.exec(request?.body.message ?? '')?.[1] ?? 'none';

async function failures(reason: string): Promise<number> {
  const metric = await metrics.smsFailures.get();
  return metric.values.find((value) => value.labels.reason === reason)?.value ?? 0;
}

describe('the HTTP SMS gateway (SMS_SENDER=http)', () => {
  it('POSTs the code as JSON with the credential header; the code texted logs in, and no log line holds it or the credential', async () => {
    const phone = '13900000031';
    const response = await requestCode(phone);
    expect(response.statusCode, response.body).toBe(200);
    expect(received).toHaveLength(1);
    const [sent] = received;
    expect(sent!.headers.authorization).toBe(TOKEN);
    expect(sent!.headers['content-type']).toBe('application/json');
    expect(sent!.body.phone).toBe(phone);
    expect(sent!.body.message).toMatch(/login code is \d{6}\. It expires in 2 minutes/);
    const code = codeIn(sent);
    expect((await login(phone, code)).json()).toMatchObject({ success: true });

    const logs = logLines.join('');
    expect(logs).toContain('/api/user/code?phone=139****0031');
    expect(logs).not.toContain(code);
    expect(logs).not.toContain('gateway-secret');
  });

  it('answers 503 with Retry-After when the gateway fails, counts it, and withdraws the code that was never delivered', async () => {
    const phone = '13900000032';
    mode = 'fail';
    const before = await failures('status');
    const response = await requestCode(phone);
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBeDefined();
    expect(response.json()).toEqual({ success: false, errorMsg: expect.stringContaining('Could not send the code') });
    expect(await failures('status')).toBe(before + 1);
    // The gateway saw the code but the user never got it: it must not work.
    expect(await env.redis.exists(`login:code:${phone}`)).toBe(0);
    const attempt = await login(phone, codeIn(received[0]));
    expect(attempt.statusCode).toBe(400);
    expect(attempt.json().errorMsg).toContain('No valid code');
    expect(logLines.join('')).not.toContain(codeIn(received[0]));
  });

  it('gives up on a gateway that does not answer within SMS_HTTP_TIMEOUT_MS: 503 fast, counted as a timeout', async () => {
    const phone = '13900000033';
    mode = 'hang';
    const before = await failures('timeout');
    const started = Date.now();
    const response = await requestCode(phone);
    expect(response.statusCode).toBe(503);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(await failures('timeout')).toBe(before + 1);
    expect(await env.redis.exists(`login:code:${phone}`)).toBe(0);
  });

  it('counts an unreachable gateway as a network failure', async () => {
    const sender = new HttpSmsSender({ url: 'http://127.0.0.1:9/', authHeader: '', authToken: '', bodyTemplate: '{}', timeoutMs: 1000, codeTtlSeconds: 60 });
    await expect(sender.sendLoginCode('13900000034', '123456')).rejects.toMatchObject({ reason: 'network' });
  });
});

describe('choosing the sender (SMS_SENDER)', () => {
  const config = (vars: Record<string, string>): Config => loadConfig(vars);
  const silent = { info: () => undefined };

  it('refuses an unset SMS_SENDER in production, naming the variable; an explicit log sender starts', () => {
    expect(() => createSmsSender(config({ NODE_ENV: 'production' }), silent)).toThrow(ConfigError);
    expect(() => createSmsSender(config({ NODE_ENV: 'production' }), silent)).toThrow(/SMS_SENDER/);
    expect(createSmsSender(config({ NODE_ENV: 'production', SMS_SENDER: 'log' }), silent)).toBeInstanceOf(LogSmsSender);
    expect(createSmsSender(config({ NODE_ENV: 'development' }), silent)).toBeInstanceOf(LogSmsSender);
    expect(createSmsSender(config({ SMS_SENDER: 'http', SMS_HTTP_URL: 'https://sms.example.com/send' }), silent)).toBeInstanceOf(HttpSmsSender);
    // Codes are credentials: plain HTTP in production only to a loopback relay.
    const production = (url: string) => config({ NODE_ENV: 'production', SMS_SENDER: 'http', SMS_HTTP_URL: url });
    expect(() => createSmsSender(production('http://sms.example.com/send'), silent)).toThrow(/SMS_HTTP_URL must be an https/);
    expect(createSmsSender(production('http://127.0.0.1:8025/send'), silent)).toBeInstanceOf(HttpSmsSender);
    expect(createSmsSender(production('https://sms.example.com/send'), silent)).toBeInstanceOf(HttpSmsSender);
  });

  it('refuses a gateway without a URL, a bad URL and a body template that is not JSON', () => {
    expect(() => loadConfig({ SMS_SENDER: 'http' })).toThrow(/SMS_HTTP_URL/);
    expect(() => loadConfig({ SMS_SENDER: 'http', SMS_HTTP_URL: 'ftp://x' })).toThrow(/SMS_HTTP_URL/);
    expect(() => loadConfig({ SMS_HTTP_BODY: '{"to": {{phone}}' })).toThrow(/SMS_HTTP_BODY/);
    expect(() => loadConfig({ SMS_SENDER: 'carrier-pigeon' })).toThrow(/SMS_SENDER/);
  });

  it.each(['production', 'test'] as const)('the log sender never writes the code when NODE_ENV=%s (only in development)', async (nodeEnv) => {
    const lines: string[] = [];
    const log = { info: (...args: unknown[]) => lines.push(JSON.stringify(args)) };
    await createSmsSender(config({ NODE_ENV: nodeEnv, SMS_SENDER: 'log' }), log).sendLoginCode('13900000031', '774155');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('139****0031');
    expect(lines[0]).not.toContain('774155');
    const dev: string[] = [];
    await createSmsSender(config({ NODE_ENV: 'development' }), { info: (...args: unknown[]) => dev.push(JSON.stringify(args)) }).sendLoginCode(
      '13900000031',
      '774155',
    );
    expect(dev[0]).toContain('774155');
  });
});
