import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ok } from '../../http/result.js';
import { ResultOf } from '../../http/schemas.js';
import { ShopTypeSchema } from './shop-schemas.js';
import type { ShopTypeService } from './shop-type-service.js';

export const shopTypeRoutes: FastifyPluginAsyncTypebox<{ service: ShopTypeService }> = async (app, { service }) => {
  app.get(
    '/shop-type/list',
    { config: { public: true }, schema: { summary: 'All shop types, in display order', response: { 200: ResultOf(Type.Array(ShopTypeSchema)) } } },
    async () => ok(await service.list()),
  );
};
