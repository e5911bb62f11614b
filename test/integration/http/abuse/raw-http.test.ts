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

/** Writes raw bytes, returns everything the server sent until it closed the connection. */
function rawRequest(bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' || error.code === 'EPIPE' ? undefined : reject(error)));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
    socket.end(bytes);
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

  it('still serves afterwards', async () => {
    const response = await fetch(`http://127.0.0.1:${port}/api/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ success: true });
  });
});
