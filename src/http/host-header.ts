import type { FastifyInstance } from 'fastify';
import { HttpError } from './errors.js';
import { HTTP_MESSAGES } from './http-messages.js';

/**
 * Node's HTTP server options that leave the Host check to `refuseMissingHost`: Node's own
 * (`requireHostHeader`) answers 400 with an empty body, before Fastify sees the request.
 */
export const HOST_CHECK_SERVER_OPTIONS = { requireHostHeader: false } as const;

/**
 * An HTTP/1.1 request without a Host header is malformed (RFC 9112, section 3.2): 400 in the
 * API's JSON and the request's language, and the connection closed, as Node would. HTTP/1.0
 * requests had no Host and are served.
 */
export function refuseMissingHost(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    const raw = request.raw;
    if (raw.headers.host !== undefined || raw.httpVersionMajor !== 1 || raw.httpVersionMinor !== 1) {
      done();
      return;
    }
    reply.header('connection', 'close');
    done(new HttpError(400, HTTP_MESSAGES.missingHost()));
  });
}
