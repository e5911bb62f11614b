import type { FastifyInstance } from 'fastify';
import { connect, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { testRedisUrl } from '../../../../kit/services.js';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSeckill, type Seckill } from '../../../../src/modules/seckill/index.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';
import { buy, insertSeckillVoucher } from '../../../support/seckill.js';
import { eventually } from '../../../support/eventually.js';
import { closeOrderStreams, openOrderStream } from '../../../support/order-stream.js';
import type { OrderChange } from '../../../../src/modules/seckill/types.js';
import { orderStreamSeatsKey } from '../../../../src/modules/seckill/keys.js';

const REQUEST_DEADLINE_MS = 500;
const STREAMS_PER_USER = 2;

let env: TestEnv;
let placing: FastifyInstance;
let streaming: FastifyInstance;
let streamingUrl: string;
let worker: Seckill;
let users: Array<{ id: string; token: string }>;

beforeAll(async () => {
  // No worker in the apps: the test writes orders to MySQL when it wants (a third "instance").
  env = await createTestEnv({
    ORDER_EVENTS_HEARTBEAT_MS: '200',
    ORDER_EVENTS_STREAMS_PER_USER: String(STREAMS_PER_USER),
    SECKILL_PAYMENT_WINDOW_SECONDS: '1',
  });
  users = await createUsersWithSessions(env, 10);
  ({ app: placing } = await buildTestApp(env, undefined, { consumerName: 'events-a' }));
  // The streaming instance alone has a short request deadline (its Redis and MySQL bounds stay the
  // test env's: this busy machine would time out the setup's commands).
  const shortDeadline = { ...env.config, deadlines: { ...env.config.deadlines, requestMs: REQUEST_DEADLINE_MS } };
  ({ app: streaming } = await buildTestApp({ ...env, config: shortDeadline }, undefined, { consumerName: 'events-b' }));
  streamingUrl = await streaming.listen({ port: 0, host: '127.0.0.1' });
  worker = buildSeckill({ config: env.config, redis: env.redis, db: env.db, consumerName: 'events-worker', log: pino({ level: 'silent' }) });
});

afterAll(async () => {
  await closeOrderStreams();
  await worker?.close();
  await placing?.close();
  await streaming?.close();
  await env?.cleanup();
});

async function placeOrder(user: { token: string }): Promise<string> {
  const voucherId = await insertSeckillVoucher(env, { stock: 5 });
  const placed = (await buy(placing, user.token, voucherId)).json<{ success: boolean; data: string }>();
  expect(placed.success).toBe(true);
  return placed.data;
}

describe('order state events (SSE)', () => {
  it('streams an order placed on one instance from another: queued first, then created and paid, then ends', async () => {
    const user = users[0]!;
    const orderId = await placeOrder(user);
    const stream = await openOrderStream(streamingUrl, orderId, user.token);
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(stream.headers.get('x-accel-buffering')).toBe('no');
    await stream.waitFor('queued');
    // Past the request deadline: the stream stays open, heartbeats flow (polled: a busy machine may
    // deliver them late, not never).
    await new Promise((resolve) => setTimeout(resolve, REQUEST_DEADLINE_MS * 2));
    const heartbeatsAtDeadline = stream.heartbeats;
    await expect.poll(() => stream.heartbeats).toBeGreaterThan(heartbeatsAtDeadline);
    await worker.worker.drainOnce();
    await stream.waitFor('created');
    expect((await placing.inject({ method: 'POST', url: `/api/voucher-order/${orderId}/pay`, headers: { authorization: user.token } })).statusCode).toBe(200);
    await stream.waitFor('paid');
    await stream.ended;
    expect(stream.states).toEqual(['queued', 'created', 'paid']);
  });

  it('reports a worker batch in one message: one PUBLISH however many orders it wrote', async () => {
    const listener = new Redis(testRedisUrl());
    const messages: OrderChange[][] = [];
    listener.on('message', (_channel: string, message: string) => messages.push(JSON.parse(message) as OrderChange[]));
    await listener.subscribe(`${env.keyPrefix}order-events`);
    try {
      const voucherId = await insertSeckillVoucher(env, { stock: 10 });
      const buyers = users.slice(4, 10);
      const orderIds = await Promise.all(buyers.map(async (user) => (await buy(placing, user.token, voucherId)).json<{ data: string }>().data));
      await worker.worker.drainOnce();
      await eventually(() => expect(messages.flat().filter((change) => change.voucherId === voucherId)).toHaveLength(buyers.length));
      const ofThisSale = messages.filter((batch) => batch.some((change) => change.voucherId === voucherId));
      expect(ofThisSale).toHaveLength(1);
      expect(new Set(ofThisSale[0]!.map((change) => change.orderId))).toEqual(new Set(orderIds));
      expect(ofThisSale[0]!.every((change) => change.state === 'created')).toBe(true);
    } finally {
      await listener.quit();
    }
  });

  it('a late subscriber gets the current state first; a cancellation by the canceller ends the stream', async () => {
    const user = users[1]!;
    const orderId = await placeOrder(user);
    await worker.worker.drainOnce();
    const stream = await openOrderStream(streamingUrl, orderId, user.token);
    await stream.waitFor('created');
    await new Promise((resolve) => setTimeout(resolve, 1_100)); // the payment window (1 s) passes
    await worker.canceller.runOnce();
    await stream.waitFor('cancelled');
    await stream.ended;
    expect(stream.states).toEqual(['created', 'cancelled']);
  });

  it("only the owner may watch an order (404 for another user's)", async () => {
    const orderId = await placeOrder(users[2]!);
    expect((await openOrderStream(streamingUrl, orderId, users[3]!.token)).status).toBe(404);
  });

  it(`bounds a user's open streams over all instances (${STREAMS_PER_USER}, then 429) and frees a slot when one closes`, async () => {
    const user = users[4]!;
    const orderId = await placeOrder(user);
    const placingUrl = await placing.listen({ port: 0, host: '127.0.0.1' });
    const first = await openOrderStream(placingUrl, orderId, user.token);
    const second = await openOrderStream(streamingUrl, orderId, user.token);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect((await openOrderStream(streamingUrl, orderId, user.token)).status).toBe(429);
    first.close();
    await eventually(async () => {
      const again = await openOrderStream(placingUrl, orderId, user.token);
      again.close();
      expect(again.status).toBe(200);
    }, 5_000);
    second.close();
  });

  it('a client that leaves at once (a reset socket, within 0-44 ms) leaves no seat and no subscription behind', async () => {
    const user = users[5]!;
    const orderId = await placeOrder(user);
    const { port } = new URL(streamingUrl);
    // More abrupt departures than the user has seats, at spread moments: some before the seat is
    // taken, some while the subscription or the order is being read, some once the stream is open.
    await Promise.all(Array.from({ length: 12 }, (_, i) => requestAndReset(Number(port), orderId, user.token, i * 4)));
    // Leases outlive a heartbeat (200 ms) 3 times: a seat still held after 2 s is renewed by a leaked stream.
    await eventually(async () => {
      expect(await env.redis.zcard(orderStreamSeatsKey(user.id))).toBe(0);
      expect(await env.redis.pubsub('NUMSUB', `${env.keyPrefix}order-events`)).toEqual([`${env.keyPrefix}order-events`, 0]);
    }, 2_000);
    const stream = await openOrderStream(streamingUrl, orderId, user.token);
    expect(stream.status).toBe(200);
    await stream.waitFor('queued');
    stream.close();
  });

  it("streams pipelined on one connection that is reset give back every seat, the queued responses' too", async () => {
    const user = users[6]!;
    const orderId = await placeOrder(user);
    const { port } = new URL(streamingUrl);
    const warnings: Error[] = [];
    const onWarning = (warning: Error): number => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      // Requests on one keep-alive connection, more than a socket's 10 listeners: from the second
      // on, each response waits for the one before it (a stream that never ends), without a socket
      // of its own to see the reset by.
      const socket = await pipelineStreams(Number(port), orderId, user.token, 12);
      await eventually(async () => expect(await env.redis.zcard(orderStreamSeatsKey(user.id))).toBe(STREAMS_PER_USER), 5_000);
      await resetAndWait(socket);
      // Leases outlive a heartbeat (200 ms) 3 times: a seat still held after 2 s is renewed by a leaked stream.
      await eventually(async () => {
        expect(await env.redis.zcard(orderStreamSeatsKey(user.id))).toBe(0);
        expect(await env.redis.pubsub('NUMSUB', `${env.keyPrefix}order-events`)).toEqual([`${env.keyPrefix}order-events`, 0]);
      }, 2_000);
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((warning) => warning.name === 'MaxListenersExceededWarning')).toEqual([]);
    const streams = await Promise.all(Array.from({ length: STREAMS_PER_USER }, () => openOrderStream(streamingUrl, orderId, user.token)));
    for (const stream of streams) stream.close();
    expect(streams.map((stream) => stream.status)).toEqual(Array(STREAMS_PER_USER).fill(200));
  });
});

/** Opens a connection and sends `count` GET …/events requests on it at once (HTTP/1.1 pipelining). */
function pipelineStreams(port: number, orderId: string, authorization: string, count: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const request = `GET /api/voucher-order/${orderId}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${authorization}\r\n\r\n`;
    const socket = connect(port, '127.0.0.1', () => {
      socket.off('error', reject);
      socket.on('error', () => undefined);
      socket.write(request.repeat(count));
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

function resetAndWait(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    socket.once('close', () => resolve());
    socket.resetAndDestroy();
  });
}

/** Sends GET …/events on a raw socket and resets the connection `afterMs` later, whatever the server answered by then. */
function requestAndReset(port: number, orderId: string, authorization: string, afterMs: number): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(`GET /api/voucher-order/${orderId}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${authorization}\r\n\r\n`);
      setTimeout(() => socket.resetAndDestroy(), afterMs);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve());
  });
}
