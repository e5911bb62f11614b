import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ok } from '../../http/result.js';
import { IdParams } from '../../http/schemas.js';
import { currentUser } from '../user/auth-hooks.js';
import type { OrderService } from './service.js';

export const orderRoutes: FastifyPluginAsyncTypebox<{ service: OrderService }> = async (app, { service }) => {
  app.post('/voucher-order/seckill/:id', { schema: { params: IdParams } }, async (request) =>
    ok(await service.placeSeckillOrder(currentUser(request).id, request.params.id)),
  );

  app.get('/voucher-order/:id', { schema: { params: IdParams } }, async (request) =>
    ok(await service.getOrder(currentUser(request).id, request.params.id)),
  );

  app.post('/voucher-order/:id/pay', { schema: { params: IdParams } }, async (request) =>
    ok(await service.pay(currentUser(request).id, request.params.id)),
  );
};
