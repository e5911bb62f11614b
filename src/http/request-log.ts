import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

export interface RequestLogOptions {
  /** `slow`: a line only for a request answered 5xx or after `slowMs`; `all`: a line for every request. */
  lines: 'slow' | 'all';
  slowMs: number;
}

/**
 * The app's one line per request, written when the request is answered, in place of Fastify's
 * own lines ("incoming request", "request completed", "Route … not found"): at the default level
 * those two lines per request cost more CPU than the sale's decision. By default only the
 * requests an operator looks for are written, at `warn` so they show at any level up to it:
 * answered 5xx (the error itself is written where it happens, with its cause) or slower than
 * `slowMs`. `all` writes every request at `info`. The line carries the request (method, URL
 * masked, host, address), its status, route and time.
 */
export class RequestLog extends LogController {
  constructor(private readonly options: RequestLogOptions) {
    super();
  }

  override incomingRequest(): void {}

  override routeNotFound(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const ms = reply.elapsedTime;
    const status = reply.statusCode;
    const notable = status >= 500 || ms >= this.options.slowMs || error != null;
    if (!notable && this.options.lines !== 'all') return;
    const line = { req: request, status, route: request.routeOptions.url ?? 'unmatched', ms: Math.round(ms * 10) / 10, ...(error ? { err: error } : {}) };
    if (notable) request.log.warn(line, status >= 500 || error ? 'request failed' : 'slow request');
    else request.log.info(line, 'request completed');
  }
}
