import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HTTP_MESSAGES } from './http-messages.js';
import { localize } from './language.js';
import type { Message } from '../lib/messages/index.js';
import { fail } from './result.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * What the deadline's 503 says on this route instead of "try again", for a route whose work
     * may have been done when it fires (the seckill order: its outcome is then unknown).
     */
    deadlineMessage?: (request: FastifyRequest) => Message;
  }
}

/** Seconds a client is asked to wait after a 503 of a stalled dependency. */
export const RETRY_AFTER_SECONDS = 1;

/**
 * The last line of defence against a hung request: a request the server has been working on for
 * `deadlineMs` without answering gets 503 + Retry-After, whatever it is waiting for. Redis
 * commands and MySQL queries have shorter bounds of their own (config.deadlines), so the handler
 * usually answers first and names the dependency; this catches the rest (several slow steps in a
 * row, a pool queue, a Cluster still looking for its nodes).
 *
 * The clock runs from the first onRequest hook (the session lookup reads Redis) and stops while
 * the request body is still arriving: a slow upload is the client's, bounded by
 * HTTP_REQUEST_TIMEOUT_MS (408), never "a dependency is slow". Multipart uploads are left to that
 * timeout altogether: their body is read inside the handler, at the client's pace.
 *
 * The late handler result is dropped: the reply is hijacked once the 503 is out, so Fastify
 * neither sends it nor complains that the reply was already sent.
 */
export function installDeadline(app: FastifyInstance, deadlineMs: number): void {
  const expired = new WeakSet<FastifyRequest>();
  const clocks = new WeakMap<FastifyRequest, DeadlineClock>();
  // A handler that fails after the deadline answered: Fastify would log "Promise errored, but
  // reply.sent = true was set" at error level for each; say what happened instead, once, as a warning.
  app.addHook('onRoute', (route) => {
    const handler = route.handler;
    route.handler = function (this: FastifyInstance, request, reply) {
      const result: unknown = handler.call(this, request, reply);
      if (!(result instanceof Promise)) return result;
      return result.catch((error: unknown) => {
        if (!expired.has(request)) throw error;
        request.log.warn({ err: error }, 'request failed after its deadline answered 503');
        return undefined;
      });
    };
  });
  app.addHook('onRequest', (request, reply, done) => {
    if (request.headers['content-type']?.startsWith('multipart/') === true) {
      done();
      return;
    }
    const clock = new DeadlineClock(deadlineMs, () => {
      if (expire(request, reply, deadlineMs)) expired.add(request);
    });
    clocks.set(request, clock);
    reply.raw.once('close', () => {
      clock.stop();
    });
    done();
  });
  // Between these two hooks Fastify reads the body: the clock waits for a body still arriving.
  app.addHook('preParsing', (request, _reply, payload, done) => {
    if (!request.raw.complete) clocks.get(request)?.pause();
    done(null, payload);
  });
  app.addHook('preValidation', (request, _reply, done) => {
    clocks.get(request)?.resume();
    done();
  });
}

/**
 * A countdown that calls `onExpiry` once `budgetMs` of running time has passed. It starts running;
 * `pause` and `resume` hold it while the client sends, `stop` ends it for good.
 */
class DeadlineClock {
  private timer: NodeJS.Timeout | undefined;
  private runningSince = 0;
  private stopped = false;

  constructor(
    private remainingMs: number,
    private readonly onExpiry: () => void,
  ) {
    this.resume();
  }

  resume(): void {
    if (this.stopped || this.timer !== undefined) return;
    this.runningSince = performance.now();
    this.timer = setTimeout(this.onExpiry, this.remainingMs).unref();
  }

  pause(): void {
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.remainingMs -= performance.now() - this.runningSince;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}

/** Answers 503 unless the request was answered already; true if it did. */
function expire(request: FastifyRequest, reply: FastifyReply, deadlineMs: number): boolean {
  if (reply.sent || reply.raw.headersSent || reply.raw.destroyed) return false;
  const message = request.routeOptions.config.deadlineMessage?.(request) ?? HTTP_MESSAGES.deadlinePassed({ ms: deadlineMs });
  request.log.warn({ deadlineMs, route: request.routeOptions.url }, 'request deadline passed: answered 503');
  void reply
    .code(503)
    .header('retry-after', String(RETRY_AFTER_SECONDS))
    .send(fail(localize(request, HTTP_MESSAGES.withRequestId({ message: localize(request, message), requestId: request.id }))));
  reply.hijack();
  return true;
}
