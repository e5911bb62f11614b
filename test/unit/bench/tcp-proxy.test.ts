/**
 * The fault harness's toxic TCP proxy (bench/faults/proxy/tcp-proxy.ts) in front of an echo server on
 * loopback: each toxic's effect measured on real sockets (no Redis or MySQL needed).
 */
import { once } from 'node:events';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTcpProxy, type TcpProxy } from '../../../bench/faults/proxy/tcp-proxy.js';

let echo: Server;
let echoPort = 0;
let proxy: TcpProxy;
const clients: Socket[] = [];

beforeAll(async () => {
  echo = createServer((socket) => {
    socket.on('error', () => undefined);
    socket.pipe(socket);
  });
  echo.listen(0, '127.0.0.1');
  await once(echo, 'listening');
  const address = echo.address();
  echoPort = typeof address === 'object' && address ? address.port : 0;
});

afterAll(async () => {
  await new Promise((resolve) => echo.close(resolve));
});

afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy();
  await proxy.close();
});

async function connect(): Promise<Socket & { received: () => Buffer; arrivals: Array<{ at: number; bytes: number }> }> {
  const socket = createConnection({ host: '127.0.0.1', port: proxy.port });
  clients.push(socket);
  socket.on('error', () => undefined); // the resets are the point; tests that expect one listen for it
  const parts: Buffer[] = [];
  const arrivals: Array<{ at: number; bytes: number }> = [];
  socket.on('data', (data: Buffer) => {
    parts.push(data);
    arrivals.push({ at: performance.now(), bytes: data.length });
  });
  await once(socket, 'connect');
  return Object.assign(socket, { received: () => Buffer.concat(parts), arrivals });
}

/** The quickest of five round trips of `text` (ms). */
async function fastestRoundTrip(socket: Socket & { received: () => Buffer }, text: string): Promise<number> {
  const rounds: number[] = [];
  for (let i = 0; i < 5; i++) {
    const before = socket.received().length;
    socket.write(text);
    rounds.push(await receive(socket, before + text.length));
  }
  return Math.min(...rounds);
}

/** Waits until `socket` has received `length` bytes; ms taken. */
async function receive(socket: { received: () => Buffer }, length: number, timeoutMs = 10_000): Promise<number> {
  const started = performance.now();
  while (socket.received().length < length) {
    if (performance.now() - started > timeoutMs) throw new Error(`received ${socket.received().length} of ${length} bytes in ${timeoutMs} ms`);
    await sleep(2);
  }
  return performance.now() - started;
}

describe('toxic TCP proxy', () => {
  it('passes bytes both ways untouched without toxics', async () => {
    proxy = await startTcpProxy({ host: '127.0.0.1', port: echoPort });
    const client = await connect();
    const payload = Buffer.from('x'.repeat(100_000));
    client.write(payload);
    await receive(client, payload.length);
    expect(client.received().equals(payload)).toBe(true);
    expect(proxy.bytesForwarded).toEqual({ upstream: payload.length, downstream: payload.length });
  });

  it('latency: each chunk held latency ± jitter, order kept, added and removed on an open connection', async () => {
    proxy = await startTcpProxy({ host: '127.0.0.1', port: echoPort });
    const client = await connect();
    // Without the toxic a round trip is fast: the quickest of five, so that one busy moment of a
    // loaded machine (a single sample over 50 ms) does not fail it.
    expect(await fastestRoundTrip(client, 'warm')).toBeLessThan(50);

    proxy.addToxic('slow', { type: 'latency', latencyMs: 100, jitterMs: 50 }, 'downstream');
    const rounds: number[] = [];
    for (let i = 0; i < 10; i++) {
      const before = client.received().length;
      client.write(`m${i}`);
      rounds.push(await receive(client, before + 2));
    }
    // 100 ± 50 ms a chunk, plus a little loop and timer slack on a busy machine.
    for (const ms of rounds) expect(ms).toBeGreaterThanOrEqual(48);
    for (const ms of rounds) expect(ms).toBeLessThan(400);
    expect(Math.max(...rounds) - Math.min(...rounds)).toBeGreaterThan(5); // jitter varies the delay

    // A burst of chunks with jitter larger than their spacing still arrives in order.
    const before = client.received().length;
    const burst = Array.from({ length: 30 }, (_, i) => `<${String(i).padStart(2, '0')}>`);
    for (const part of burst) {
      client.write(part);
      await sleep(3);
    }
    await receive(client, before + burst.join('').length);
    expect(client.received().subarray(before).toString()).toBe(burst.join(''));

    proxy.removeToxic('slow');
    expect(await fastestRoundTrip(client, 'ok')).toBeLessThan(50);
  });

  it('stall: open and new connections forward nothing until removed, then the held bytes go in order', async () => {
    proxy = await startTcpProxy({ host: '127.0.0.1', port: echoPort });
    const open = await connect();
    proxy.addToxic('hang', { type: 'stall' });
    open.write('first,');
    open.write('second');
    const fresh = await connect(); // the proxy still accepts connections
    fresh.write('new');
    await sleep(400);
    expect(open.received().length).toBe(0);
    expect(fresh.received().length).toBe(0);
    expect(proxy.bytesForwarded).toEqual({ upstream: 0, downstream: 0 });

    proxy.removeToxic('hang');
    await receive(open, 12);
    await receive(fresh, 3);
    expect(open.received().toString()).toBe('first,second');
    expect(fresh.received().toString()).toBe('new');
  });

  it('stall on one direction: the server gets the request, the answer is held', async () => {
    proxy = await startTcpProxy({ host: '127.0.0.1', port: echoPort });
    const client = await connect();
    proxy.addToxic('hang', { type: 'stall' }, 'downstream');
    client.write('ping');
    await expect.poll(() => proxy.bytesForwarded.upstream).toBe(4); // the server got it (however slowly a busy machine forwards it)
    await sleep(300);
    expect(client.received().length).toBe(0); // and the answer is held
    proxy.removeToxic('hang');
    await receive(client, 4);
    expect(client.received().toString()).toBe('ping');
  });

  it('bandwidth: 64 KiB takes about 1 s at 64 KiB/s, about 0.5 s once raised to 128 KiB/s on the open connection', async () => {
    proxy = await startTcpProxy({ host: '127.0.0.1', port: echoPort });
    proxy.addToxic('thin', { type: 'bandwidth', kbPerSecond: 64 }, 'downstream');
    const client = await connect();
    const started = performance.now();
    client.write(Buffer.alloc(64 * 1024, 1));
    await receive(client, 64 * 1024);
    const fullMs = performance.now() - started;
    expect(fullMs).toBeGreaterThan(850); // the first slice goes at once: ≥ 0.9 s of pacing
    expect(fullMs).toBeLessThan(2_500);

    proxy.addToxic('thin', { type: 'bandwidth', kbPerSecond: 128 }, 'downstream'); // replaced on the open connection
    const before = client.received().length;
    const halfStarted = performance.now();
    client.write(Buffer.alloc(64 * 1024, 2));
    await receive(client, before + 64 * 1024);
    const halfMs = performance.now() - halfStarted;
    expect(halfMs).toBeGreaterThan(400);
    expect(halfMs).toBeLessThan(fullMs);
  });

  it('reset: open connections get ECONNRESET; with refuseNew, new ones too until restore()', async () => {
    proxy = await startTcpProxy({ host: '127.0.0.1', port: echoPort });
    const client = await connect();
    const errored = once(client, 'error');
    proxy.reset();
    const [error] = (await errored) as [NodeJS.ErrnoException];
    expect(error.code).toBe('ECONNRESET');
    expect(proxy.connectionsReset).toBe(1);

    // Without refuseNew, the next connection works.
    const next = await connect();
    next.write('a');
    await receive(next, 1);

    proxy.reset({ refuseNew: true });
    const refused = createConnection({ host: '127.0.0.1', port: proxy.port });
    clients.push(refused);
    refused.on('error', () => undefined);
    const [refusal] = (await once(refused, 'error')) as [NodeJS.ErrnoException];
    expect(refusal.code).toBe('ECONNRESET');
    expect(proxy.connectionsRefused).toBe(1);

    proxy.restore();
    const again = await connect();
    again.write('b');
    await receive(again, 1);
    expect(again.received().toString()).toBe('b');
  });
});
