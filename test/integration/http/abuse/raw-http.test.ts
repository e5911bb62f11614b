import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, createTestEnv, type TestEnv } from '../../../support/test-env.js';

/**
 * What app.inject cannot send: bytes Node's HTTP parser rejects before Fastify routes them, on a
 * real port. Each gets a 4xx in the wrapper and a closed connection; the server keeps serving.
 */

let env: TestEnv;
let app: FastifyInstance;
let port: number;

beforeAll(async () => {
  env = await createTestEnv();
  ({ app } = await buildTestApp(env));
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as { port: number }).port;
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

/**
 * Writes raw bytes, returns everything the server sent until it closed the connection. `end`:
 * half-close after them (a request still being served is then abandoned).
 */
function rawRequest(bytes: string, end = true): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' || error.code === 'EPIPE' ? undefined : reject(error)));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
    if (end) socket.end(bytes);
    else socket.write(bytes);
  });
}

function parse(raw: string): { status: number; body: unknown } {
  const [head = '', body = ''] = raw.split('\r\n\r\n');
  return { status: Number(head.split(' ')[1]), body: JSON.parse(body) };
}

describe('malformed HTTP on a real port', () => {
  const cases: Array<[string, string, number]> = [
    ['garbage instead of a request line', 'HELLO THERE\r\n\r\n', 400],
    ['a header without a colon', 'GET /api/health HTTP/1.1\r\nHost: x\r\nbroken header\r\n\r\n', 400],
    ['a NUL in a header value', 'GET /api/health HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n\r\n', 400],
    [
      'Content-Length and Transfer-Encoding together (smuggling)',
      'POST /api/user/login HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      400,
    ],
    ['a negative Content-Length', 'POST /api/user/login HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n', 400],
    ['headers over 16 KB', `GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
  ];

  for (const [name, bytes, status] of cases) {
    it(`answers ${name} with ${status} in the wrapper`, async () => {
      const answer = parse(await rawRequest(bytes));
      expect(answer.status).toBe(status);
      expect(answer.body).toEqual({ success: false, errorMsg: expect.any(String) });
    });
  }

  it('answers an HTTP/1.1 request without Host 400 in the wrapper, in its language, and closes the connection', async () => {
    for (const [acceptLanguage, errorMsg] of [
      ['en', 'The request has no Host header'],
      ['zh-CN', '请求缺少 Host 头'],
    ] as const) {
      const raw = await rawRequest(`GET /api/health HTTP/1.1\r\nAccept-Language: ${acceptLanguage}\r\n\r\n`);
      expect(parse(raw), raw).toEqual({ status: 400, body: { success: false, errorMsg } });
      expect(raw.toLowerCase()).toContain('\r\nconnection: close\r\n');
    }
    // HTTP/1.0 had no Host header: such a request is served (and the connection closed after it).
    expect(await rawRequest('GET /api/health HTTP/1.0\r\n\r\n', false)).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('still serves afterwards', async () => {
    const response = await fetch(`http://127.0.0.1:${port}/api/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ success: true });
  });
});

describe('the request target and Host (issue 40, items 7d and 7e)', () => {
  /** A GET of `target` with `headers` (each a whole line); the server closes the connection after its answer. */
  const get = (target: string, headers: string[] = ['Host: x']) =>
    rawRequest(`GET ${target} HTTP/1.1\r\n${[...headers, 'Connection: close'].join('\r\n')}\r\n\r\n`, false);

  it('answers a query string that makes the target over 4096 characters 414, on any path', async () => {
    for (const path of ['/api/health', '/api/shop-type/list', '/imgs/none.png', '/']) {
      const target = `${path}?q=${'a'.repeat(12_000)}`;
      expect(parse(await get(target)), path).toEqual({ status: 414, body: { success: false, errorMsg: 'The URL (path and query) is over 4096 characters' } });
    }
  });

  it('serves a target of exactly 4096 characters, and counts the path too', async () => {
    const path = '/api/health?q=';
    expect(await get(`${path}${'a'.repeat(4096 - path.length)}`)).toMatch(/^HTTP\/1\.1 200 /);
    expect(parse(await get(`${path}${'a'.repeat(4097 - path.length)}`)).status).toBe(414);
    const longPath = `/${'abc/'.repeat(1100)}`;
    expect(parse(await get(longPath))).toEqual({ status: 414, body: { success: false, errorMsg: 'The URL (path and query) is over 4096 characters' } });
  });

  it('answers a request with two Host headers 400 in its language and closes the connection, whatever their case and values', async () => {
    for (const [hosts, language, errorMsg] of [
      [['Host: a.example', 'Host: b.example'], 'en', 'The request has more than one Host header'],
      [['Host: x', 'host: x'], 'en', 'The request has more than one Host header'],
      [['HOST: x', 'Accept: */*', 'Host: x'], 'zh-CN', '请求含有多个 Host 头'],
    ] as const) {
      const raw = await get('/api/health', [...hosts, `Accept-Language: ${language}`]);
      expect(parse(raw), hosts.join(' | ')).toEqual({ status: 400, body: { success: false, errorMsg } });
      expect(raw.toLowerCase()).toContain('\r\nconnection: close\r\n');
    }
    // HTTP/1.0 too (RFC 9112: any request with more than one Host line).
    expect(parse(await rawRequest('GET /api/health HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n', false)).status).toBe(400);
  });

  it('serves one Host header as before', async () => {
    expect(await get('/api/health', ['Host: a.example'])).toMatch(/^HTTP\/1\.1 200 /);
  });
});
