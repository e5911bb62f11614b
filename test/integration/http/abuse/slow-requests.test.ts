import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../../src/app.js';
import { ok } from '../../../../src/http/result.js';
import { createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';

/**
 * A client that sends its headers and then trickles the body a byte at a time (slowloris on the
 * body) has its connection closed within HTTP_REQUEST_TIMEOUT_MS plus a second (issue #17, item
 * 4), for a JSON body and for an upload. Node checks request timeouts only every
 * connectionsCheckingInterval (30 s by default): it held such sockets up to twice the timeout.
 *
 * A slow body is the client's fault, never a dependency's: the request deadline (shorter than
 * the request timeout, as in production) does not count the upload, and one request gets one
 * answer, the connection closed when it went out before the body arrived (issue #28, item 10).
 */

const TIMEOUT_MS = 3_000;
const DEADLINE_MS = 1_000;
const SLACK_MS = 1_200;
let env: TestEnv;
let app: FastifyInstance;
let port: number;
let token: string;

beforeAll(async () => {
  // A connection timeout (socket inactivity) far above the request timeout: only the latter may cut.
  env = await createTestEnv({
    HTTP_REQUEST_TIMEOUT_MS: String(TIMEOUT_MS),
    REQUEST_DEADLINE_MS: String(DEADLINE_MS),
    HTTP_CONNECTION_TIMEOUT_MS: '600000',
    HTTP_KEEP_ALIVE_TIMEOUT_MS: '5000',
  });
  const [user] = await createUsersWithSessions(env, 1);
  token = user!.token;
  app = await buildApp({ config: env.config, redis: env.redis, db: env.db });
  // A handler slower than the deadline (a stand-in for a slow dependency), taking a JSON body.
  app.post('/api/slow-echo', { config: { public: true } }, async (request) => {
    await sleep(DEADLINE_MS * 2);
    return ok(request.body);
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as { port: number }).port;
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

/**
 * Sends `head`, then one byte of `body` every `gapMs` until the server closes the connection;
 * returns what it answered and after how long (from the first byte sent).
 */
function trickle(head: string, body: string, gapMs: number): Promise<{ answer: string; elapsedMs: number }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let started = 0;
    let timer: NodeJS.Timeout | undefined;
    socket.on('connect', () => {
      started = performance.now();
      socket.write(head);
      let next = 0;
      timer = setInterval(() => {
        if (next < body.length && socket.writable) socket.write(body[next++]!);
      }, gapMs);
    });
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' || error.code === 'EPIPE' ? undefined : reject(error)));
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ answer: Buffer.concat(chunks).toString('latin1'), elapsedMs: performance.now() - started });
    });
    socket.setTimeout(30_000, () => socket.destroy(new Error('the server kept the socket open for 30 s')));
  });
}

/** Every answer in `raw`, in order: status, head (lower case) and JSON body (by Content-Length). */
function answers(raw: string): Array<{ status: number; headers: string; body: unknown }> {
  const found = [];
  let rest = raw;
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n');
    const head = rest.slice(0, end).toLowerCase();
    const length = Number(/^content-length: *(\d+)/m.exec(head)?.[1] ?? 0);
    const body = rest.slice(end + 4, end + 4 + length);
    found.push({ status: Number(head.split(' ')[1]), headers: head, body: JSON.parse(body) as unknown });
    rest = rest.slice(end + 4 + length);
  }
  return found;
}

const loginBody = JSON.stringify({ phone: '13800000000', code: '123456' });
const loginHead = (extra = '') =>
  `POST /api/user/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${loginBody.length}\r\n${extra}\r\n`;

describe('a slow body is the client\'s fault: one answer, never "a dependency is slow"', () => {
  it("a body withheld after the headers gets one answer, 408 in the API's JSON, and the connection closed", async () => {
    const { answer, elapsedMs } = await trickle(loginHead() + loginBody.slice(0, 10), '', 100);
    expect(answers(answer), answer).toEqual([
      { status: 408, headers: expect.stringContaining('connection: close'), body: { success: false, errorMsg: 'The request took too long to arrive' } },
    ]);
    expect(elapsedMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(elapsedMs).toBeLessThan(TIMEOUT_MS + SLACK_MS);
  });

  it('a body slower than the request deadline but within the request timeout reaches the handler', async () => {
    // The last two bytes arrive about 0.75 s apart: the body is complete after the deadline has
    // passed since the headers, well before the request timeout.
    const { answer } = await trickle(loginHead('Connection: close\r\n') + loginBody.slice(0, -2), loginBody.slice(-2), (DEADLINE_MS * 3) / 4);
    expect(answers(answer), answer).toEqual([
      { status: 400, headers: expect.any(String), body: { success: false, errorMsg: expect.stringMatching(/^No valid code for this phone/) } },
    ]);
  });

  it('the deadline counts the time after the body arrived: a slow handler still gets 503 a deadline after it', async () => {
    const body = JSON.stringify({ hello: 'world' });
    const head = `POST /api/slow-echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
    const lastByteAfterMs = (DEADLINE_MS * 3) / 4;
    const { answer, elapsedMs } = await trickle(head + body.slice(0, -1), body.slice(-1), lastByteAfterMs);
    expect(answers(answer), answer).toEqual([
      {
        status: 503,
        headers: expect.stringContaining('retry-after: 1'),
        body: { success: false, errorMsg: expect.stringContaining(`No answer within ${DEADLINE_MS} ms`) },
      },
    ]);
    // The clock ran only for the few milliseconds before the body was awaited, and from its end.
    expect(elapsedMs).toBeGreaterThanOrEqual(lastByteAfterMs + DEADLINE_MS - 100);
  });

  it('an answer sent before the body arrived (401 on a protected route) closes the connection: no 408 follows', async () => {
    const head = `POST /api/blog HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n`;
    const { answer } = await trickle(head + '{"title":', '', 100);
    expect(answers(answer), answer).toEqual([
      { status: 401, headers: expect.stringContaining('connection: close'), body: { success: false, errorMsg: 'Please log in first' } },
    ]);
  });
});

describe('a body trickled a byte at a time', () => {
  it('gets 408 within the request timeout plus a second (JSON body)', async () => {
    const body = JSON.stringify({ phone: '13800000000', code: '123456', password: 'x'.repeat(200) });
    const head = `POST /api/user/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const { answer, elapsedMs } = await trickle(head, body, 300);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(elapsedMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(elapsedMs).toBeLessThan(TIMEOUT_MS + SLACK_MS);
  });

  it('gets 408 within the request timeout plus a second (upload-sized multipart body)', async () => {
    const boundary = '----slow';
    const file = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`;
    const size = 1024 * 1024; // announced: a 1 MB image that never finishes arriving
    const head = `POST /api/upload/blog HTTP/1.1\r\nHost: x\r\nAuthorization: ${token}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${file.length + size}\r\n\r\n`;
    const { answer, elapsedMs } = await trickle(head, file + 'x'.repeat(64), 100);
    // Fastify may already have routed the request (the handler waits on the stream): whether the
    // 408 reaches the client or the socket is simply destroyed, it must not be held any longer.
    expect(answer === '' || /^HTTP\/1\.1 408 /.test(answer), answer.slice(0, 200)).toBe(true);
    expect(elapsedMs).toBeLessThan(TIMEOUT_MS + SLACK_MS);
  });

  it('still serves other clients', async () => {
    expect((await fetch(`http://127.0.0.1:${port}/api/health`)).status).toBe(200);
  });
});
