import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import type { Socket } from 'node:net';
import { IdParams } from '../../../http/schemas.js';
import { currentUser } from '../../users/auth-hooks.js';
import { RateLimited } from '../errors/index.js';
import { SECKILL_MESSAGES } from '../messages.js';
import type { OrderChange } from '../types.js';
import type { OrderView } from '../order-views.js';
import type { OrderEventHub } from './order-event-hub.js';
import { FINAL_STATES, STATE_RANK } from './order-events.js';
import type { StreamSeat, StreamSeats } from './stream-seats.js';

export interface OrderEventRoutesOptions {
  hub: OrderEventHub;
  seats: StreamSeats;
  streamsPerUser: number;
  heartbeatMs: number;
  /** The order as its owner sees it (404 for anyone else). */
  readOrder: (userId: string, orderId: string) => Promise<OrderView>;
}

type StateEvent = Pick<OrderView, 'id' | 'voucherId' | 'state'>;

/**
 * GET /voucher-order/{id}/events: the order's states as Server-Sent Events, the current one first,
 * then each change published by any instance, until a final state (or the client leaves).
 *
 * Subscribed before the current state is read, so no change falls between the two; a change
 * that is not later than what was sent is dropped. The headers go out as soon as the state is
 * read, so the request deadline (src/http/deadline.ts, which answers only unanswered requests)
 * never cuts the stream; heartbeats keep proxies and idle timeouts from doing so.
 */
export const orderEventRoutes: FastifyPluginAsyncTypebox<OrderEventRoutesOptions> = async (app, options) => {
  const open = new Set<() => void>();
  // Open streams would hold the server's close until their clients left.
  app.addHook('preClose', (done) => {
    for (const finish of open) finish();
    done();
  });

  app.get(
    '/voucher-order/:id/events',
    {
      schema: {
        summary: `My order's state as Server-Sent Events (event "state", data {id, voucherId, state}): the current one, then each change, closed after paid or cancelled; 429 beyond ${options.streamsPerUser} open streams per user`,
        params: IdParams,
      },
    },
    async (request, reply) => {
      const userId = currentUser(request).id;
      const orderId = request.params.id;
      // Watched before anything is held: a client gone at any point releases all the stream took.
      const held = new HeldResources();
      whenClientGone(reply, () => held.releaseAll());
      if (connectionClosed(reply)) return abandon(reply); // left before the handler ran: nothing taken
      const seat = await options.seats.take(userId);
      if (seat === null) throw new RateLimited(() => SECKILL_MESSAGES.tooManyOrderStreams({ streams: options.streamsPerUser }), 5_000);
      held.add(() => seat.release());
      if (held.released) return abandon(reply); // left while the seat was taken (released by now)
      const early: OrderChange[] = [];
      let onChange = (change: OrderChange): void => void early.push(change);
      let current: OrderView;
      try {
        const unsubscribe = await options.hub.subscribe(userId, (change) => {
          if (change.orderId === orderId) onChange(change);
        });
        held.add(unsubscribe);
        current = await options.readOrder(userId, orderId);
      } catch (error) {
        held.releaseAll();
        throw error;
      }
      if (held.released) return abandon(reply); // left while subscribing or reading the order
      if (reply.sent || reply.raw.headersSent) {
        // The request deadline answered while the state was read.
        held.releaseAll();
        return reply;
      }
      const stream = startStream(reply, seat, held, options.heartbeatMs, open);
      stream.send(current);
      for (const change of early) stream.send(toEvent(change));
      onChange = (change) => stream.send(toEvent(change));
      return reply;
    },
  );
};

/**
 * What an open stream holds (its seat, its subscription): released once, by whichever comes
 * first of the client leaving, a failure, or the stream's end; one added after that is released at once.
 */
class HeldResources {
  private readonly releases: Array<() => Promise<void>> = [];
  released = false;

  add(release: () => Promise<void>): void {
    if (this.released) void release().catch(() => undefined);
    else this.releases.push(release);
  }

  releaseAll(): void {
    if (this.released) return;
    this.released = true;
    for (const release of this.releases.splice(0)) void release().catch(() => undefined);
  }
}

/**
 * Calls `gone` once, when the response closes (answered, or the client left while it was on the
 * socket) or the connection does. A pipelined request's response is queued behind the one before
 * it, without a socket, and gets no 'close' of its own when the connection dies; only the socket
 * tells. The first of the two stops the watch of the other.
 */
function whenClientGone(reply: FastifyReply, gone: () => void): void {
  const once = (): void => {
    reply.raw.off('close', once);
    stopWatchingSocket();
    gone();
  };
  reply.raw.once('close', once);
  const stopWatchingSocket = onConnectionClose(reply.request.raw.socket, once);
}

/**
 * Per connection, what to call when it closes, behind one 'close' listener: a client pipelining
 * many requests on one socket would otherwise pile up a listener each.
 */
const departures = new WeakMap<Socket, Set<() => void>>();

function onConnectionClose(socket: Socket, gone: () => void): () => void {
  let waiting = departures.get(socket);
  if (waiting === undefined) {
    const calls = new Set<() => void>();
    departures.set(socket, calls);
    socket.once('close', () => {
      for (const call of calls) call();
    });
    waiting = calls;
  }
  waiting.add(gone);
  return () => void waiting.delete(gone);
}

/** Nobody to answer: the reply is taken from Fastify, which would otherwise write to a closed socket. */
function abandon(reply: FastifyReply): FastifyReply {
  reply.hijack();
  reply.raw.destroy();
  return reply;
}

/**
 * The client's connection has closed already (its 'close' event is past). Read on the request's
 * socket: a pipelined response gets its socket only once the one before it is done.
 */
const connectionClosed = (reply: FastifyReply): boolean => reply.raw.destroyed || reply.request.raw.socket.destroyed;

const toEvent = (change: OrderChange): StateEvent => ({ id: change.orderId, voucherId: change.voucherId, state: change.state });

function startStream(reply: FastifyReply, seat: StreamSeat, held: HeldResources, heartbeatMs: number, open: Set<() => void>) {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    // nginx: pass each event on at once instead of buffering the response.
    'x-accel-buffering': 'no',
    // The socket goes with the stream: an ended stream leaves no keep-alive connection to hold a closing server.
    connection: 'close',
  });
  let lastRank = -1;
  let finished = false;
  const heartbeat = setInterval(() => {
    raw.write(': heartbeat\n\n');
    seat.renew().catch(() => undefined);
  }, heartbeatMs);
  const finish = (): void => {
    if (finished) return;
    finished = true;
    clearInterval(heartbeat);
    open.delete(finish);
    held.releaseAll();
    raw.end();
  };
  open.add(finish);
  // The stream is one of the things held: it ends when they are released (the client gone: whenClientGone).
  held.add(async () => finish());
  return {
    send(event: StateEvent): void {
      const rank = STATE_RANK[event.state];
      if (finished || rank <= lastRank) return;
      lastRank = rank;
      raw.write(`event: state\ndata: ${JSON.stringify({ id: event.id, voucherId: event.voucherId, state: event.state })}\n\n`);
      if (FINAL_STATES.has(event.state)) finish();
    },
  };
}
