import type { FastifyInstance } from 'fastify';
import { HttpError } from './errors.js';
import { HTTP_MESSAGES } from './http-messages.js';

// The limits on a request's target (path and query): each answered 414.

/**
 * The longest path parameter a route takes (find-my-way's `maxParamLength`). A longer one is
 * refused 414 (`frameworkErrors`), and so is any path with a longer segment that no route
 * matched: no route could take it, and the web app's catch-all GET route, which takes every
 * path, would otherwise turn the router's 414 into a 404.
 */
export const MAX_PARAM_LENGTH = 100;

export function hasOverlongSegment(path: string): boolean {
  if (path.length <= MAX_PARAM_LENGTH) return false;
  return path.split('/').some((segment) => segment.length > MAX_PARAM_LENGTH && decoded(segment).length > MAX_PARAM_LENGTH);
}

/** A segment as the router measures it: percent-decoded (as written if it cannot be). */
function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * The longest request target (path and query, as sent). The longest a client of this API writes
 * is under 1.5 KB (a shop search of 128 Chinese characters, percent-encoded); a longer one is a
 * probe or a mistake, and its query would otherwise be parsed and ignored.
 */
export const MAX_TARGET_LENGTH = 4096;

/** 414 for a request whose target is over MAX_TARGET_LENGTH, on every path (the API, files, the web app). */
export function refuseLongTargets(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    // Before HMDP_COMPAT's rewrite: the target as the client sent it.
    if (request.originalUrl.length <= MAX_TARGET_LENGTH) done();
    else done(new HttpError(414, HTTP_MESSAGES.targetTooLong({ max: MAX_TARGET_LENGTH })));
  });
}
