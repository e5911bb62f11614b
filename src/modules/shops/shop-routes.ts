import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { badRequest } from '../../http/errors.js';
import { ok } from '../../http/result.js';
import { ADMIN_ONLY, Current, EmptyResult, IdBody, IdParams, IdString, ResultOf, Text } from '../../http/schemas.js';
import { Id } from '../../lib/wire/index.js';
import { bothTexts } from '../../lib/messages/index.js';
import { requireAdmin } from '../users/auth-hooks.js';
import { LATITUDE_LIMIT, LONGITUDE_LIMIT } from './geo-index.js';
import { SHOP_MESSAGES } from './messages.js';
import type { ShopService } from './shop-service.js';
import { ShopViewSchema } from './shop-schemas.js';

const Longitude = Type.Number({
  minimum: -LONGITUDE_LIMIT,
  maximum: LONGITUDE_LIMIT,
  errorMessage: bothTexts(SHOP_MESSAGES.longitudeRange({ limit: LONGITUDE_LIMIT })),
});
const Latitude = Type.Number({
  minimum: -LATITUDE_LIMIT,
  maximum: LATITUDE_LIMIT,
  errorMessage: bothTexts(SHOP_MESSAGES.latitudeRange({ limit: LATITUDE_LIMIT })),
});
const Count = Type.Integer({ minimum: 0, maximum: 2_000_000_000, errorMessage: SHOP_MESSAGES.wholeNumber.texts });

const ShopFields = {
  name: Text({ maxLength: 128 }),
  typeId: IdBody,
  images: Text({ maxLength: 1024, mayBeEmpty: true }),
  area: Text({ maxLength: 128, mayBeEmpty: true }),
  address: Text({ maxLength: 255 }),
  x: Longitude,
  y: Latitude,
  /** Yuan per person. */
  avgPrice: Count,
  sold: Count,
  comments: Count,
  /** Stars × 10. */
  score: Type.Integer({ minimum: 0, maximum: 50, errorMessage: SHOP_MESSAGES.score.texts }),
  openHours: Text({ maxLength: 32, mayBeEmpty: true }),
};

/**
 * hmdp's shop routes. Reads are public; writes need an administrator (the session's role, the same
 * check as voucher writes): 401 without a session, 403 for other users.
 */
export const shopRoutes: FastifyPluginAsyncTypebox<{ service: ShopService }> = async (app, { service }) => {
  app.get(
    '/shop/:id',
    { config: { public: true }, schema: { summary: 'A shop by id (cached)', params: IdParams, response: { 200: ResultOf(ShopViewSchema) } } },
    async (request) => ok(await service.get(request.params.id)),
  );

  app.get(
    '/shop/of/type',
    {
      config: { public: true },
      schema: {
        summary: 'Shops of a type, 5 a page; nearest first with x (longitude) and y (latitude)',
        querystring: Type.Object({
          typeId: IdString,
          current: Current,
          x: Type.Optional(Longitude),
          y: Type.Optional(Latitude),
        }),
        response: { 200: ResultOf(Type.Array(ShopViewSchema)) },
      },
    },
    async (request) => {
      const { typeId, current, x, y } = request.query;
      if ((x === undefined) !== (y === undefined)) {
        throw badRequest(x === undefined ? SHOP_MESSAGES.xNeedsY() : SHOP_MESSAGES.yNeedsX());
      }
      const position = x !== undefined && y !== undefined ? { x, y } : undefined;
      return ok(await service.ofType(typeId, current, position));
    },
  );

  app.get(
    '/shop/of/name',
    {
      config: { public: true },
      schema: {
        summary: 'Shops whose name contains a text, 10 a page',
        querystring: Type.Object({ name: Type.Optional(Type.String({ maxLength: 128 })), current: Current }),
        response: { 200: ResultOf(Type.Array(ShopViewSchema)) },
      },
    },
    async (request) => ok(await service.ofName(request.query.name, request.query.current)),
  );

  app.post(
    '/shop',
    {
      schema: {
        ...ADMIN_ONLY,
        summary: 'Create a shop: data = its id',
        // Name, type, address and position are needed; the rest have defaults.
        body: Type.Object({
          ...Type.Partial(Type.Object(ShopFields)).properties,
          ...Type.Pick(Type.Object(ShopFields), ['name', 'typeId', 'address', 'x', 'y']).properties,
        }),
        response: { 200: ResultOf(Id) },
      },
    },
    async (request) => {
      requireAdmin(request);
      return ok(await service.create(request.body));
    },
  );

  app.put(
    '/shop',
    {
      schema: {
        ...ADMIN_ONLY,
        summary: 'Update the fields given of a shop',
        // Only the fields present change (hmdp's updateById skips nulls).
        body: Type.Object({ id: IdBody, ...Type.Partial(Type.Object(ShopFields)).properties }),
        response: { 200: EmptyResult },
      },
    },
    async (request) => {
      requireAdmin(request);
      await service.update(request.body);
      return ok();
    },
  );
};
