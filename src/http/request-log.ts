import type { FastifyInstance } from 'fastify';

export interface RequestLogOptions {
  /** `slow`: a line only for a request answered 5xx or after `slowMs`; `all`: a line for every request. */
  lines: 'slow' | 'all';
  slowMs: number;
}

/**
 * The app's one line per request, written when the request is answered (Fastify's own two lines,
 * "incoming request" and "request completed", are off: at the default level they cost more CPU
 * per request than the sale's decision). By default only the requests an operator looks for are
 * written, at `warn` so they show at any level up to it: answered 5xx (the error itself is written
 * where it happens, with its cause) or slower than `slowMs`. `all` writes every request at `info`.
 * The line carries the request (method, URL masked, host, address), its status, route and time.
 */
export function installRequestLog(app: FastifyInstance, options: RequestLogOptions): void {
  app.addHook('onResponse', (request, reply, done) => {
    const ms = reply.elapsedTime;
    const status = reply.statusCode;
    const notable = status >= 500 || ms >= options.slowMs;
    if (notable || options.lines === 'all') {
      const line = { req: request, status, route: request.routeOptions.url ?? 'unmatched', ms: Math.round(ms * 10) / 10 };
      if (notable) request.log.warn(line, status >= 500 ? 'request failed' : 'slow request');
      else request.log.info(line, 'request completed');
    }
    done();
  });
}
