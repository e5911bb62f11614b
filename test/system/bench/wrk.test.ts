/**
 * The bench's wrk closed loop (bench/harness/wrk.ts) against an HTTP server of this test that
 * answers with the header it was sent: the script sends each header set in turn, byte for byte,
 * and every answer comes back to the source by status and body.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureWrk, saturateWithWrk, type WrkRequests } from '../../../bench/harness/index.js';

let server: Server;
let url = '';

beforeAll(async () => {
  ensureWrk();
  server = createServer((request, response) => {
    // Node reads a header's bytes as latin1: back to the bytes sent, answered as they came.
    const probe = Buffer.from(String(request.headers['x-probe'] ?? '(none)'), 'latin1');
    const answer = Buffer.concat([Buffer.from(`${request.method ?? ''} ${request.url ?? ''} `), probe]);
    response.writeHead(answer.includes('refuse') ? 409 : 200, { 'content-type': 'text/plain; charset=utf-8' });
    response.end(answer);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

describe('saturateWithWrk', () => {
  it('sends the header sets in turn and hands every answer to the source by status and body', { timeout: 20_000 }, async () => {
    // Quotes, a backslash, Lua's own brackets and a non-ASCII letter: the script carries them unchanged.
    const values = ['plain', 'quote " and \\ backslash', ']] [[ --', 'café', 'refuse'];
    const requests: WrkRequests = { method: 'POST', path: '/orders/7?x=1', headerSets: values.map((value) => ({ 'x-probe': value })) };
    const seen = new Map<string, number>();
    const phase = await saturateWithWrk(
      url,
      { onResponse: (status, body) => seen.set(`${status} ${body}`, (seen.get(`${status} ${body}`) ?? 0) + 1) },
      requests,
      { connections: 4, durationSeconds: 0.3 },
    );

    expect(phase.generator).toBe('wrk');
    expect(phase.requests).toBeGreaterThan(0);
    expect(phase.errors).toBe(0);
    const expected = values.map((value) => `${value === 'refuse' ? 409 : 200} POST /orders/7?x=1 ${value}`);
    expect([...seen.keys()].sort()).toEqual(expected.sort());
    expect([...seen.values()].reduce((sum, n) => sum + n, 0)).toBe(phase.requests);
    expect(phase.non2xx).toBe(seen.get('409 POST /orders/7?x=1 refuse'));
    // Stopped by SIGINT near its duration, not by wrk's own -d (a minute more).
    expect(phase.durationSeconds).toBeLessThan(5);
  });

  it('sends no header of its own when the source gives none', { timeout: 20_000 }, async () => {
    const seen = new Set<string>();
    await saturateWithWrk(
      url,
      { onResponse: (status, body) => seen.add(`${status} ${body}`) },
      { method: 'GET', path: '/shop/1' },
      { connections: 2, durationSeconds: 0.2 },
    );
    expect([...seen]).toEqual(['200 GET /shop/1 (none)']);
  });
});
