import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ok } from '../../http/result.js';
import type { ShopTypeService } from './shop-type-service.js';

export const shopTypeRoutes: FastifyPluginAsyncTypebox<{ service: ShopTypeService }> = async (app, { service }) => {
  app.get('/shop-type/list', { config: { public: true }, schema: { summary: 'All shop types, in display order' } }, async () => ok(await service.list()));
};
