/**
 * The fault harness's proxy process (bench/faults/proxy/proxy-process.ts): toxic proxies in a child
 * process, controlled over IPC, in front of an echo server on loopback.
 */
import { once } from 'node:events';
import { createConnection, createServer, type Server } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProxyProcess, type ProxyProcess } from '../../../bench/faults/proxy/proxy-process.js';

let echo: Server;
let echoPort = 0;
let proxies: ProxyProcess;

beforeAll(async () => {
  echo = createServer((socket) => {
    socket.on('error', () => undefined);
    socket.pipe(socket);
  });
  echo.listen(0, '127.0.0.1');
  await once(echo, 'listening');
  const address = echo.address();
  echoPort = typeof address === 'object' && address ? address.port : 0;
  proxies = await startProxyProcess();
});

afterAll(async () => {
  await proxies.close();
  await new Promise((resolve) => echo.close(resolve));
});

describe('proxy process', () => {
  it('runs proxies in a child process: toxics, resets and counters over IPC', async () => {
    const proxy = await proxies.start({ host: '127.0.0.1', port: echoPort });
    const client = createConnection({ host: '127.0.0.1', port: proxy.port });
    client.on('error', () => undefined);
    let received = '';
    client.setEncoding('utf8').on('data', (data: string) => (received += data));
    await once(client, 'connect');

    await proxy.addToxic('hang', { type: 'stall' });
    client.write('held');
    await sleep(300);
    expect(received).toBe('');
    await proxy.removeToxic('hang');
    await expect.poll(() => received, { timeout: 5_000 }).toBe('held');
    expect(await proxy.stats()).toMatchObject({ connectionsAccepted: 1, openConnections: 1, bytesForwarded: { upstream: 4, downstream: 4 } });

    const closed = new Promise((resolve) => client.once('close', resolve));
    await proxy.reset();
    await closed;
    expect((await proxy.stats()).connectionsReset).toBe(1);
  });
});
