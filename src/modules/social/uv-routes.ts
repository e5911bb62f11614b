import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { badRequest } from '../../http/errors.js';
import { ok } from '../../http/result.js';
import { withHook } from '../../http/route-hooks.js';
import { ADMIN_ONLY, IdString } from '../../http/schemas.js';
import { parseDay } from '../../lib/calendar/index.js';
import { requireAdmin } from '../users/auth-hooks.js';
import type { UvService } from './uv-service.js';
import { SOCIAL_MESSAGES } from './messages.js';

/** The route whose successful GETs count as a visit of a shop's page. */
const SHOP_PAGE_ROUTE = '/api/shop/:id';
/** Probes of load balancers and monitors are not visitors. */
const HEALTH_ROUTE = '/api/health';

/**
 * `GET /stats/uv?date=&shopId=`: administrators only (traffic figures are business data).
 * Visits are recorded by `recordVisitHook`, which app.ts adds to the /api scope's routes.
 */
export const uvRoutes: FastifyPluginAsyncTypebox<{ service: UvService }> = async (app, { service }) => {
  app.get(
    '/stats/uv',
    {
      schema: {
        ...ADMIN_ONLY,
        summary: 'Unique visitors of a day (default today), of the site or of one shop',
        querystring: Type.Object({
          date: Type.Optional(Type.String({ pattern: '^[0-9]{4}-?[0-9]{2}-?[0-9]{2}$', errorMessage: SOCIAL_MESSAGES.dateFormat.texts })),
          shopId: Type.Optional(IdString),
        }),
      },
    },
    async (request) => {
      requireAdmin(request);
      const { date, shopId } = request.query;
      const day = date === undefined ? undefined : parseDay(date);
      if (day === null) throw badRequest(SOCIAL_MESSAGES.badDate());
      return ok(await service.count(day, shopId));
    },
  );
};

/**
 * An onRoute hook for the /api scope (UV_TRACKING): every successful GET (but the health probe)
 * is a visit of the site, `GET /api/shop/{id}` also of that shop. It gives each such route an
 * onResponse hook of its own as the route is registered, so that which route it is (the health
 * probe, a shop's page, not a GET) is settled once rather than read from `request.routeOptions`,
 * an object Fastify builds on every access, on every request.
 */
export function recordVisitHook(service: UvService) {
  return (route: RouteOptions): void => {
    if (route.method !== 'GET' || route.url === HEALTH_ROUTE) return;
    const hook = visitRecorder(service, route.url === SHOP_PAGE_ROUTE);
    route.onResponse = withHook(route.onResponse, hook, 'last');
  };
}

/**
 * Runs after the response has been sent, so the client never waits for it; a Redis failure is
 * logged, never reported to the client. Written with a callback, not async: a buffered visit (the
 * default) then costs no promise.
 */
function visitRecorder(service: UvService, isShopPage: boolean) {
  return (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    if (reply.statusCode >= 400) {
      done();
      return;
    }
    const visitor = request.user ? `u:${request.user.id}` : `ip:${request.ip}`;
    const shopId = isShopPage ? (request.params as { id?: string }).id : undefined;
    let write: Promise<void> | undefined;
    try {
      write = service.record(visitor, shopId);
    } catch (err) {
      warnVisitNotRecorded(request, err);
    }
    if (write === undefined) done();
    else write.catch((err: unknown) => warnVisitNotRecorded(request, err)).finally(done);
  };
}

function warnVisitNotRecorded(request: FastifyRequest, err: unknown): void {
  request.log.warn({ err }, 'could not record a visit');
}
