import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance } from 'fastify';

/**
 * One request, one answer: an answer that goes out while the request's body is still arriving
 * (a 401 from the auth hook, a 429, the deadline's 503 during a session lookup) closes the
 * connection. Kept alive, the socket would go on reading the body Node discards, and a body that
 * never ends would then be answered a second time on it, 408 at HTTP_REQUEST_TIMEOUT_MS.
 * Fastify does the same for a body it fails to parse.
 */
export function closeOnEarlyAnswers(app: FastifyInstance): void {
  app.addHook('onSend', (request, reply, payload, done) => {
    if (!request.raw.complete && hasBody(request.headers)) reply.header('connection', 'close');
    done(null, payload);
  });
}

/**
 * Whether the request announced a body. A request without one is complete as soon as its headers
 * are parsed, but Node marks it so only after Fastify has seen it: an answer given at once would
 * look early.
 */
const hasBody = (headers: IncomingHttpHeaders): boolean =>
  headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
