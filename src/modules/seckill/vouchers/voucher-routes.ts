import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ok } from '../../../http/result.js';
import { ADMIN_ONLY, IdBody, IdString, Instant, ResultOf } from '../../../http/schemas.js';
import { Id } from '../../../lib/wire/index.js';
import { requireAdmin } from '../../users/auth.js';
import { Buckets, CaptchaMaxNumber, LimitPerUser, PurchaseGateMode, SaleStock } from '../admin/sale-schemas.js';
import type { VoucherService } from './voucher-service.js';
import { VoucherViewSchema } from './voucher-schemas.js';
import { SECKILL_MESSAGES } from '../messages.js';

/** Money in fen (1/100 yuan), as hmdp stores it. */
const Fen = Type.Integer({ minimum: 0, maximum: 100_000_000, errorMessage: SECKILL_MESSAGES.wholeFen.texts });

const VoucherBody = {
  shopId: IdBody,
  title: Type.String({ minLength: 1, maxLength: 255 }),
  subTitle: Type.Optional(Type.String({ maxLength: 255 })),
  rules: Type.Optional(Type.String({ maxLength: 1024 })),
  payValue: Fen,
  actualValue: Fen,
};

export const voucherRoutes: FastifyPluginAsyncTypebox<{ service: VoucherService }> = async (app, { service }) => {
  app.post(
    '/voucher',
    { schema: { ...ADMIN_ONLY, summary: 'Create a voucher of a shop: data = its id', body: Type.Object(VoucherBody), response: { 200: ResultOf(Id) } } },
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
        body: Type.Object({
          ...VoucherBody,
          stock: SaleStock,
          beginTime: Instant,
          endTime: Instant,
          limitPerUser: Type.Optional(LimitPerUser),
          purchaseGate: Type.Optional(PurchaseGateMode),
          captchaMaxNumber: Type.Optional(CaptchaMaxNumber),
          buckets: Type.Optional(Buckets),
        }),
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
