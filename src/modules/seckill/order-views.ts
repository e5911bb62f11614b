import { Type, type Static } from 'typebox';
import { Id, Timestamp } from '../../lib/wire/index.js';
import type { OrderState } from './types.js';

// An order as the API shows it: the order routes' answer schemas (orders/, events/) and the types
// the code builds those answers as, derived from them.

/** Every OrderState once: a Record, so a state added to the type and not here (or the reverse) fails to compile. */
const ORDER_STATES: Record<OrderState, true> = { queued: true, created: true, paid: true, used: true, cancelled: true, refunding: true, refunded: true };

export const OrderStateSchema = Type.Unsafe<OrderState>({
  type: 'string',
  enum: Object.keys(ORDER_STATES),
  description: 'queued until the order is written to MySQL',
});

/** One order as GET /voucher-order/{id} shows it. */
export const OrderViewSchema = Type.Object({
  id: Id,
  voucherId: Id,
  state: OrderStateSchema,
  createTime: Type.Optional(Timestamp),
  payTime: Type.Optional(Timestamp),
});

/** One line of the caller's order list: the order with its voucher's title, shop and price. */
export const OrderListItemSchema = Type.Object({
  id: Id,
  voucherId: Id,
  title: Type.String(),
  shopId: Id,
  state: OrderStateSchema,
  payValue: Type.Integer({ description: 'fen (1/100 yuan)' }),
  createTime: Timestamp,
  payTime: Type.Optional(Timestamp),
});

/** One order as GET /voucher-order/{id} shows it: the schema's type, so the two cannot differ. */
export type OrderView = Static<typeof OrderViewSchema>;
/** One line of the caller's order list (GET /voucher-order/of/me). */
export type OrderListItem = Static<typeof OrderListItemSchema>;
