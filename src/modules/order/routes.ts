import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ok } from '../../http/result.js';
import { IdParams } from '../../http/schemas.js';
import { currentUser } from '../user/auth-hooks.js';
import type { OrderLimits } from './limits.js';
import type { OrderService } from './service.js';

export const orderRoutes: FastifyPluginAsyncTypebox<{ service: OrderService; limits: OrderLimits }> = async (app, { service, limits }) => {
  // rateLimit: false: the general per-IP API limit (if on) skips this route, which has its own.
  app.post('/voucher-order/seckill/:id', { schema: { params: IdParams }, config: { rateLimit: false } }, async (request) => {
    const userId = currentUser(request).id;
    await limits.check(userId, request.ip, request.params.id);
    return ok(await service.placeSeckillOrder(userId, request.params.id));
  });

  app.get('/voucher-order/:id', { schema: { params: IdParams } }, async (request) =>
    ok(await service.getOrder(currentUser(request).id, request.params.id)),
  );

  app.post('/voucher-order/:id/pay', { schema: { params: IdParams } }, async (request) =>
    ok(await service.pay(currentUser(request).id, request.params.id)),
  );
};
