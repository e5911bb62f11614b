import { Type } from 'typebox';
import { bothTexts } from '../../../lib/messages/index.js';
import { Id, Timestamp } from '../../../lib/wire/index.js';
import { MAX_BUCKETS, MAX_LIMIT_PER_USER } from '../keys.js';
import { SECKILL_MESSAGES } from '../messages.js';
import { CAPTCHA_MAX_NUMBER } from '../gate/captcha-challenges.js';
import { GATE_MODES, type GateMode } from '../gate/gate-settings-cache.js';

// The settings of a sale that its creation (voucher-routes.ts) and its changes (sale-control-routes.ts) both take.

/** Most units one sale may offer. */
export const MAX_SALE_STOCK = 10_000_000;

/** Units a sale offers (at its creation: for sale; in a change: in total, sold or not). */
export const SaleStock = Type.Integer({
  minimum: 0,
  maximum: MAX_SALE_STOCK,
  errorMessage: bothTexts(SECKILL_MESSAGES.stockRange({ max: MAX_SALE_STOCK })),
});

/** Live orders one user may hold of a seckill voucher (1 = hmdp's one per user). */
export const LimitPerUser = Type.Integer({
  minimum: 1,
  maximum: MAX_LIMIT_PER_USER,
  errorMessage: bothTexts(SECKILL_MESSAGES.limitPerUserRange({ max: MAX_LIMIT_PER_USER })),
});

/** Redis buckets a sale's stock is sold from (docs/flows/seckill-buckets.md): 1 = one hash, today's layout. */
export const Buckets = Type.Integer({
  minimum: 1,
  maximum: MAX_BUCKETS,
  description: 'Redis buckets the stock is sold from, 1..8 (default 1); a hot sale over several Redis Cluster masters',
  errorMessage: bothTexts(SECKILL_MESSAGES.bucketsRange({ max: MAX_BUCKETS })),
});

/** off: hmdp's order route; token: a purchase token first; captcha: the token after a captcha. */
export const PurchaseGateMode = Type.Union(
  GATE_MODES.map((mode) => Type.Literal(mode)),
  { description: 'off (default) | token | captcha', errorMessage: SECKILL_MESSAGES.badGateMode.texts },
);

/** A captcha sale's cost: its challenges' answers are drawn from 1..this (ALTCHA maxNumber), so a solver makes half of it in attempts on average. */
export const CaptchaMaxNumber = Type.Integer({
  minimum: CAPTCHA_MAX_NUMBER.min,
  maximum: CAPTCHA_MAX_NUMBER.max,
  description: `the captcha's cost: attempts of the proof of work, a solver makes half on average (default ${CAPTCHA_MAX_NUMBER.default})`,
  errorMessage: bothTexts(SECKILL_MESSAGES.captchaMaxNumberRange({ min: CAPTCHA_MAX_NUMBER.min, max: CAPTCHA_MAX_NUMBER.max })),
});

// What the sale-control routes answer (their response schemas): sale-controls.ts SaleControlResult and AuditEntry.

/** PurchaseGateMode typed as GateMode (TypeBox infers `never` from a Union of mapped literals), for answers. */
export const GateModeAnswer = Type.Unsafe<GateMode>(PurchaseGateMode);

const SaleSettingsFields = {
  stock: Type.Integer({ description: 'units the sale offers, sold or not' }),
  beginTime: Timestamp,
  endTime: Timestamp,
  paused: Type.Boolean(),
  limitPerUser: Type.Integer(),
  purchaseGate: GateModeAnswer,
  captchaMaxNumber: Type.Integer(),
  buckets: Type.Integer(),
};

/** A sale's settings after an administrator's control, with what is left. */
export const SaleControlResultSchema = Type.Object({
  voucherId: Id,
  ...SaleSettingsFields,
  left: Type.Integer({ description: 'units still for sale' }),
  changed: Type.Boolean({ description: 'false when the sale already was as asked (nothing recorded)' }),
});

/** A sale's settings as an audit row holds them: captchaMaxNumber and buckets are absent from rows older than their migrations. */
const AuditedSettings = Type.Object({
  ...SaleSettingsFields,
  captchaMaxNumber: Type.Optional(SaleSettingsFields.captchaMaxNumber),
  buckets: Type.Optional(SaleSettingsFields.buckets),
});

/** One change of a sale by an administrator. */
export const AuditEntrySchema = Type.Object({
  id: Id,
  voucherId: Id,
  adminId: Id,
  action: Type.String({ description: 'pause | resume | update' }),
  before: AuditedSettings,
  after: AuditedSettings,
  time: Timestamp,
});
