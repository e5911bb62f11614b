import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { HttpError } from './errors.js';
import { HTTP_MESSAGES } from './http-messages.js';
import type { Message } from '../lib/messages/index.js';

/**
 * Node's HTTP server options that leave the Host check to `refuseBadHost`: Node's own
 * (`requireHostHeader`) answers 400 with an empty body, before Fastify sees the request.
 */
export const HOST_CHECK_SERVER_OPTIONS = { requireHostHeader: false } as const;

/**
 * RFC 9112, section 3.2: an HTTP/1.1 request without a Host header, and any request with more
 * than one, is malformed: 400 in the API's JSON and the request's language, and the connection
 * closed, as Node would. HTTP/1.0 requests had no Host and are served. Node keeps the first of
 * two Host headers in `headers`, so two are counted in `rawHeaders`: a proxy and the app could
 * otherwise each read another host from one request.
 */
export function refuseBadHost(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    const problem = hostProblem(request.raw);
    if (problem === undefined) {
      done();
      return;
    }
    reply.header('connection', 'close');
    done(new HttpError(400, problem));
  });
}

function hostProblem(raw: IncomingMessage): Message | undefined {
  if (raw.headers.host === undefined) return raw.httpVersionMajor === 1 && raw.httpVersionMinor === 1 ? HTTP_MESSAGES.missingHost() : undefined;
  return hostLines(raw.rawHeaders) > 1 ? HTTP_MESSAGES.duplicateHost() : undefined;
}

/** How many Host header lines: rawHeaders holds each line's name and value in turn, names as sent. */
function hostLines(rawHeaders: string[]): number {
  let count = 0;
  for (let index = 0; index < rawHeaders.length; index += 2) {
    const name = rawHeaders[index]!;
    if (name.length === 4 && name.toLowerCase() === 'host') count += 1;
  }
  return count;
}
