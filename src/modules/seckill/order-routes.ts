import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ok } from '../../http/result.js';
import { Current, IdParams } from '../../http/schemas.js';
import { currentUser } from '../users/auth.js';
import type { OrderLimits } from './order-limits.js';
import { ORDER_DEADLINE_MESSAGE, type OrderService } from './order-service.js';

export const orderRoutes: FastifyPluginAsyncTypebox<{ service: OrderService; limits: OrderLimits }> = async (app, { service, limits }) => {
  // rateLimit: false: the general per-IP API limit (if on) skips this route, which has its own.
  app.post(
    '/voucher-order/seckill/:id',
    {
      schema: {
        summary:
          'Buy a seckill voucher: data = the order id (refusals: 200 with success false; 429 over a rate limit; 503 when Redis did not answer, saying whether the outcome is unknown)',
        params: IdParams,
      },
      config: { rateLimit: false, deadlineMessage: ORDER_DEADLINE_MESSAGE },
    },
    async (request) => {
      const userId = currentUser(request).id;
      service.refuseIfKnownSoldOut(request.params.id);
      await limits.check(userId, request.ip, request.params.id);
      return ok(await service.placeSeckillOrder(userId, request.params.id));
    },
  );

  // The caller's orders, newest first, 10 a page; `total` counts them all.
  app.get(
    '/voucher-order/of/me',
    { schema: { summary: 'My orders, newest first, 10 a page (total = all of them)', querystring: Type.Object({ current: Current }) } },
    async (request) => {
      const { list, total } = await service.listForUser(currentUser(request).id, request.query.current);
      return ok(list, total);
    },
  );

  // After an "outcome unknown" answer: did that order go through? MySQL first, then Redis's buyer mark.
  app.get(
    '/voucher-order/of/me/voucher/:id',
    { schema: { summary: 'My order of one voucher (created, paid... or queued: accepted, not yet written); 404 when I have none', params: IdParams } },
    async (request) => ok(await service.findForVoucher(currentUser(request).id, request.params.id)),
  );

  app.get(
    '/voucher-order/:id',
    { schema: { summary: 'One of my orders and its state (queued, created, paid, cancelled)', params: IdParams } },
    async (request) => ok(await service.getOrder(currentUser(request).id, request.params.id)),
  );

  app.post('/voucher-order/:id/pay', { schema: { summary: 'Pay one of my orders', params: IdParams } }, async (request) =>
    ok(await service.pay(currentUser(request).id, request.params.id)),
  );
};
