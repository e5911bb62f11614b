import { Type } from 'typebox';
import { Id, Timestamp } from '../../../lib/wire/index.js';
import { GateModeAnswer } from '../admin/sale-schemas.js';

// What the voucher routes answer (their response schemas).

/** A voucher as listed (voucher-service.ts VoucherView); a seckill one with its sale. */
export const VoucherViewSchema = Type.Object({
  id: Id,
  shopId: Id,
  title: Type.String(),
  subTitle: Type.String(),
  rules: Type.String(),
  payValue: Type.Integer({ description: 'fen (1/100 yuan)' }),
  actualValue: Type.Integer({ description: 'fen (1/100 yuan)' }),
  type: Type.Integer({ description: '0 plain, 1 seckill' }),
  status: Type.Integer(),
  stock: Type.Optional(Type.Integer({ description: 'seckill: units left' })),
  beginTime: Type.Optional(Timestamp),
  endTime: Type.Optional(Timestamp),
  limitPerUser: Type.Optional(Type.Integer({ description: 'seckill: live orders one user may hold' })),
  purchaseGate: Type.Optional(GateModeAnswer),
});
