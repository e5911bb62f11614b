import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { badRequest } from '../../http/errors.js';
import { ok } from '../../http/result.js';
import { ADMIN_ONLY, IdString } from '../../http/schemas.js';
import { parseDay } from '../../lib/calendar/index.js';
import { requireAdmin } from '../users/auth.js';
import type { UvService } from './uv-service.js';

/** The route whose successful GETs count as a visit of a shop's page. */
const SHOP_PAGE_ROUTE = '/api/shop/:id';
/** Probes of load balancers and monitors are not visitors. */
const HEALTH_ROUTE = '/api/health';

/**
 * `GET /stats/uv?date=&shopId=`: administrators only (traffic figures are business data).
 * Visits are recorded by `recordVisitHook`, which app.ts adds to the whole /api scope.
 */
export const uvRoutes: FastifyPluginAsyncTypebox<{ service: UvService }> = async (app, { service }) => {
  app.get(
    '/stats/uv',
    {
      schema: {
        ...ADMIN_ONLY,
        summary: 'Unique visitors of a day (default today), of the site or of one shop',
        querystring: Type.Object({
          date: Type.Optional(Type.String({ pattern: '^[0-9]{4}-?[0-9]{2}-?[0-9]{2}$', errorMessage: 'must be a date as yyyy-MM-dd' })),
          shopId: Type.Optional(IdString),
        }),
      },
    },
    async (request) => {
      requireAdmin(request);
      const { date, shopId } = request.query;
      const day = date === undefined ? undefined : parseDay(date);
      if (day === null) throw badRequest('querystring.date must be a real date as yyyy-MM-dd');
      return ok(await service.count(day, shopId));
    },
  );
};

/**
 * onResponse hook for the /api scope (UV_TRACKING): every successful GET (but the health probe) is a visit of the site,
 * `GET /api/shop/{id}` also of that shop. It runs after the response has been sent, so the
 * client never waits for it; a Redis failure is logged, never reported to the client.
 */
export function recordVisitHook(service: UvService) {
  return async (request: FastifyRequest, reply: { statusCode: number }): Promise<void> => {
    if (request.method !== 'GET' || reply.statusCode >= 400 || request.routeOptions.url === HEALTH_ROUTE) return;
    const visitor = request.user ? `u:${request.user.id}` : `ip:${request.ip}`;
    const shopId = request.routeOptions.url === SHOP_PAGE_ROUTE ? (request.params as { id?: string }).id : undefined;
    try {
      await service.record(visitor, shopId);
    } catch (err) {
      request.log.warn({ err }, 'could not record a visit');
    }
  };
}
