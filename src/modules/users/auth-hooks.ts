import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';
import { forbidden, unauthorized } from '../../http/errors.js';
import { withHook } from '../../http/route-hooks.js';
import type { SessionStore, SessionUser } from './session-store.js';
import { USER_MESSAGES } from './messages.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The logged-in user, or null for an anonymous request. */
    user: SessionUser | null;
    sessionToken: string | null;
  }
  interface FastifyContextConfig {
    /** Open to anonymous users. Routes are protected unless they say so. */
    public?: boolean;
  }
}

/**
 * hmdp's two interceptors as one onRequest hook on every route in `app`'s scope:
 * 1. any request carrying a valid `authorization` token loads its user and renews the
 *    session TTL (sliding expiry), public route or not;
 * 2. a request to a route not marked `config: { public: true }` without a user gets 401.
 * The hook is put on each route as it is registered (first of its own hooks), so whether the
 * route is public is settled once rather than read from `request.routeOptions`, an object
 * Fastify builds on every access, on every request.
 */
export function installAuthHooks(app: FastifyInstance, sessions: SessionStore): void {
  app.decorateRequest('user', null);
  app.decorateRequest('sessionToken', null);
  app.addHook('onRoute', (route) => {
    const hook = authenticate(sessions, route.config?.public === true);
    route.onRequest = withHook(route.onRequest, hook, 'first');
  });
}

/** With a callback, not async: a request without a token (a public page) costs no promise. */
function authenticate(sessions: SessionStore, isPublic: boolean): onRequestHookHandler {
  return (request, _reply, done) => {
    const token = readToken(request);
    if (token === null) {
      done(isPublic ? undefined : unauthorized());
      return;
    }
    sessions.touch(token).then((user) => {
      if (user !== null) {
        request.user = user;
        request.sessionToken = token;
      }
      done(isPublic || user !== null ? undefined : unauthorized());
    }, done);
  };
}

/** The raw token hmdp's front end sends, also accepted as `Bearer <token>`. */
function readToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization?.trim();
  if (!header) return null;
  const token = header.startsWith('Bearer ') ? header.slice('Bearer '.length).trim() : header;
  // Tokens are base64url; anything else cannot be ours, so skip the Redis round trip.
  return /^[\w-]{16,128}$/.test(token) ? token : null;
}

/** The user of a protected route (the hooks guarantee one). */
export function currentUser(request: FastifyRequest): SessionUser {
  if (request.user === null) throw unauthorized();
  return request.user;
}

/**
 * Throws 403 unless the session's role is admin. The role is read from the session (no MySQL
 * read per request); `npm run admin` updates live sessions when it grants or revokes.
 */
export function requireAdmin(request: FastifyRequest): SessionUser {
  const user = currentUser(request);
  if (user.role !== 'admin') throw forbidden(USER_MESSAGES.adminOnly());
  return user;
}
