import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/app.js';
import type { Config } from '../../../src/infra/config.js';
import { createTestEnv, type TestEnv } from '../../support/test-env.js';

/** Issue 40 (8): at the default level a fast, successful request writes no line; a slow or failed one writes one. */

let env: TestEnv;
const apps: FastifyInstance[] = [];

beforeAll(async () => {
  env = await createTestEnv();
});

afterAll(async () => {
  for (const app of apps) await app.close();
  await env?.cleanup();
});

interface Line {
  reqId?: string;
  msg?: string;
  level?: number;
  status?: number;
  route?: string;
  ms?: number;
  req?: { url?: string };
}

/** An app at LOG_LEVEL=info (the default outside tests) with the given request log, its lines kept; a route that fails on purpose. */
async function loggedApp(requestLog: Config['requestLog']): Promise<{ app: FastifyInstance; lines: Line[] }> {
  const lines: Line[] = [];
  const app = await buildApp({
    config: { ...env.config, requestLog },
    redis: env.redis,
    db: env.db,
    logger: { level: 'info', stream: { write: (line: string) => lines.push(JSON.parse(line) as Line) } },
  });
  app.get('/api/test/fails', () => {
    throw new Error('fails on purpose');
  });
  await app.ready();
  apps.push(app);
  return { app, lines };
}

/** The lines written for each request id. */
async function linesPerRequest(app: FastifyInstance, lines: Line[], urls: string[]): Promise<Line[][]> {
  const ids: string[] = [];
  for (const url of urls) ids.push(String((await app.inject({ url, headers: { 'x-request-id': `req-${ids.length}-${Date.now()}` } })).headers['x-request-id']));
  return ids.map((id) => lines.filter((line) => line.reqId === id));
}

describe('the request log', () => {
  it('by default writes nothing for a fast, successful request, and one warn line for a failed one', async () => {
    const { app, lines } = await loggedApp({ lines: 'slow', slowMs: 60_000 });
    const quiet = await linesPerRequest(
      app,
      lines,
      Array.from({ length: 5 }, () => '/api/shop-type/list'),
    );
    expect(quiet).toEqual([[], [], [], [], []]);
    const [failed] = await linesPerRequest(app, lines, ['/api/test/fails']);
    // The error where it happened (with its stack), and the request's own line.
    expect(failed!.map((line) => line.msg)).toEqual(['unhandled error', 'request failed']);
    expect(failed![1]).toMatchObject({ level: 40, status: 500, route: '/api/test/fails', req: { url: '/api/test/fails' } });
  });

  it('writes one line for a request slower than LOG_SLOW_REQUEST_MS, with its status, route and time', async () => {
    const { app, lines } = await loggedApp({ lines: 'slow', slowMs: 0 });
    const [slow] = await linesPerRequest(app, lines, ['/api/shop-type/list']);
    expect(slow).toHaveLength(1);
    expect(slow![0]).toMatchObject({ msg: 'slow request', level: 40, status: 200, route: '/api/shop-type/list' });
    expect(slow![0]!.ms).toBeGreaterThanOrEqual(0);
  });

  it('LOG_REQUESTS=all writes exactly one info line per request, the URL masked', async () => {
    const { app, lines } = await loggedApp({ lines: 'all', slowMs: 60_000 });
    const each = await linesPerRequest(app, lines, ['/api/shop-type/list', '/api/user/code?phone=13812345678', '/api/nowhere']);
    expect(each.map((request) => request.map((line) => line.msg))).toEqual([['request completed'], ['request completed'], ['request completed']]);
    expect(each[1]![0]).toMatchObject({ level: 30, req: { url: '/api/user/code?phone=138****5678' } });
    expect(each[2]![0]).toMatchObject({ status: 404, route: 'unmatched' });
  });
});
