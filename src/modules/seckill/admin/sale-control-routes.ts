import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ok } from '../../../http/result.js';
import { ADMIN_ONLY, IdParams, Instant, ONLY_KNOWN_FIELDS, ResultOf } from '../../../http/schemas.js';
import { bothTexts } from '../../../lib/messages/index.js';
import { requireAdmin } from '../../users/auth-hooks.js';
import { AuditEntrySchema, Buckets, CaptchaMaxNumber, LimitPerUser, PurchaseGateMode, SaleControlResultSchema, SaleStock } from './sale-schemas.js';
import type { SaleControls } from './sale-controls.js';
import { SECKILL_MESSAGES } from '../messages.js';

/** What a change of a sale may set, each optional. */
const SettingsChange = {
  stock: Type.Optional(SaleStock),
  beginTime: Type.Optional(Instant),
  endTime: Type.Optional(Instant),
  limitPerUser: Type.Optional(LimitPerUser),
  purchaseGate: Type.Optional(PurchaseGateMode),
  captchaMaxNumber: Type.Optional(CaptchaMaxNumber),
  buckets: Type.Optional(Buckets),
};

/** A change names at least one setting, and only settings; both refusals list them from SettingsChange. */
const SettingsChangeBody = Type.Object(SettingsChange, {
  ...ONLY_KNOWN_FIELDS,
  minProperties: 1,
  errorMessage: { minProperties: bothTexts(SECKILL_MESSAGES.giveOneSetting({ settings: Object.keys(SettingsChange).join(', ') })) },
});

/** An administrator steering a live sale (sale-controls.ts): pause, resume, stock and window, audit. */
export const saleControlRoutes: FastifyPluginAsyncTypebox<{ controls: SaleControls }> = async (app, { controls }) => {
  app.post(
    '/voucher/seckill/:id/pause',
    {
      schema: {
        ...ADMIN_ONLY,
        summary: 'Pause a sale: every order is refused until resumed (a repeat changes nothing)',
        params: IdParams,
        response: { 200: ResultOf(SaleControlResultSchema) },
      },
    },
    async (request) => ok(await controls.pause(request.params.id, requireAdmin(request).id)),
  );

  app.post(
    '/voucher/seckill/:id/resume',
    {
      schema: {
        ...ADMIN_ONLY,
        summary: 'Resume a paused sale (a repeat changes nothing)',
        params: IdParams,
        response: { 200: ResultOf(SaleControlResultSchema) },
      },
    },
    async (request) => ok(await controls.resume(request.params.id, requireAdmin(request).id)),
  );

  app.patch(
    '/voucher/seckill/:id',
    {
      schema: {
        ...ADMIN_ONLY,
        summary:
          "Change a live sale: stock = units offered in total (sold or not; not below what is sold or queued), window (an endTime not in the future ends it now), limitPerUser = live orders one user may hold, purchaseGate (off | token | captcha), captchaMaxNumber = the captcha's cost (from the next challenge), buckets = Redis buckets the stock is sold from (alone, before any unit is sold or queued and until 10 s before the sale begins, else 409; every other change applies to each bucket)",
        params: IdParams,
        body: SettingsChangeBody,
        response: { 200: ResultOf(SaleControlResultSchema) },
      },
    },
    async (request) => ok(await controls.update(request.params.id, requireAdmin(request).id, request.body)),
  );

  app.get(
    '/voucher/seckill/:id/audit',
    {
      schema: {
        ...ADMIN_ONLY,
        summary: "The sale's changes by administrators, newest first (who, when, what, before and after)",
        params: IdParams,
        response: { 200: ResultOf(Type.Array(AuditEntrySchema)) },
      },
    },
    async (request) => {
      requireAdmin(request);
      const entries = await controls.audit(request.params.id);
      return ok(entries, entries.length);
    },
  );
};
