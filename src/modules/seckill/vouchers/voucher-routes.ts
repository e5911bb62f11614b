import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ok } from '../../../http/result.js';
import { ADMIN_ONLY, IdBody, IdString, Instant, ONLY_KNOWN_FIELDS, ResultOf, Text } from '../../../http/schemas.js';
import { bothTexts } from '../../../lib/messages/index.js';
import { Id } from '../../../lib/wire/index.js';
import { requireAdmin } from '../../users/auth-hooks.js';
import { Buckets, CaptchaMaxNumber, LimitPerUser, PurchaseGateMode, SaleStock } from '../admin/sale-schemas.js';
import type { VoucherService } from './voucher-service.js';
import { VoucherViewSchema } from './voucher-schemas.js';
import { SECKILL_MESSAGES } from '../messages.js';

/** Money in fen (1/100 yuan), as hmdp stores it. */
const Fen = Type.Integer({ minimum: 0, maximum: 100_000_000, errorMessage: SECKILL_MESSAGES.wholeFen.texts });

const VoucherBody = {
  shopId: IdBody,
  title: Text({ maxLength: 255 }),
  subTitle: Type.Optional(Text({ maxLength: 255, mayBeEmpty: true })),
  rules: Type.Optional(Text({ maxLength: 1024, multiline: true, mayBeEmpty: true })),
  payValue: Fen,
  actualValue: Fen,
};

const SetByServer = Type.Optional(Type.Null({ description: 'set by the server: absent or null', errorMessage: SECKILL_MESSAGES.setByServer.texts }));

/**
 * The other fields of hmdp's Voucher entity, which the server sets itself: the course's documented
 * body sends `type` (1 for a seckill voucher), and a client posting a whole new entity sends the
 * rest empty. Each is taken only when it agrees with what the server sets, so none is dropped
 * silently: the route decides the type, a new voucher is on sale (status 1), id and times are the
 * database's.
 */
const HmdpEntityFields = (type: 0 | 1) => ({
  id: SetByServer,
  type: Type.Optional(
    Type.Literal(type, { description: `${type}: the route decides the type`, errorMessage: bothTexts(SECKILL_MESSAGES.voucherTypeOfRoute({ type })) }),
  ),
  status: Type.Optional(
    Type.Union([Type.Literal(1), Type.Null()], {
      description: '1 (on sale) or null: every new voucher is on sale',
      errorMessage: SECKILL_MESSAGES.newVoucherStatus.texts,
    }),
  ),
  createTime: SetByServer,
  updateTime: SetByServer,
});

/** What both creations say of their fields (OpenAPI). */
const FIELDS_NOTE =
  "Only the fields below: any other is refused with 400 naming it, never ignored. hmdp's id, type, status, createTime and updateTime are taken only as the server sets them.";

export const voucherRoutes: FastifyPluginAsyncTypebox<{ service: VoucherService }> = async (app, { service }) => {
  app.post(
    '/voucher',
    {
      schema: {
        ...ADMIN_ONLY,
        summary: 'Create a voucher of a shop: data = its id',
        description: FIELDS_NOTE,
        body: Type.Object({ ...VoucherBody, ...HmdpEntityFields(0) }, ONLY_KNOWN_FIELDS),
        response: { 200: ResultOf(Id) },
      },
    },
    async (request) => {
      requireAdmin(request);
      return ok(await service.addVoucher(request.body));
    },
  );

  app.post(
    '/voucher/seckill',
    {
      schema: {
        ...ADMIN_ONLY,
        summary:
          "Create a seckill voucher (stock, sale window, limitPerUser: live orders one user may hold, default 1; purchaseGate; captchaMaxNumber: the captcha's cost; buckets: Redis buckets the stock is sold from, default 1): data = its id",
        description: FIELDS_NOTE,
        body: Type.Object(
          {
            ...VoucherBody,
            stock: SaleStock,
            beginTime: Instant,
            endTime: Instant,
            limitPerUser: Type.Optional(LimitPerUser),
            purchaseGate: Type.Optional(PurchaseGateMode),
            captchaMaxNumber: Type.Optional(CaptchaMaxNumber),
            buckets: Type.Optional(Buckets),
            ...HmdpEntityFields(1),
          },
          ONLY_KNOWN_FIELDS,
        ),
        response: { 200: ResultOf(Id) },
      },
    },
    async (request) => {
      requireAdmin(request);
      return ok(await service.addSeckillVoucher(request.body));
    },
  );

  app.get(
    '/voucher/list/:shopId',
    {
      config: { public: true },
      schema: {
        summary: 'Vouchers of a shop, seckill ones with stock and window',
        params: Type.Object({ shopId: IdString }),
        response: { 200: ResultOf(Type.Array(VoucherViewSchema)) },
      },
    },
    async (request) => ok(await service.listByShop(request.params.shopId)),
  );
};
