import type { Selectable } from 'kysely';
import type { VoucherOrderTable, VoucherTable } from '../../infra/schema.js';

/*
 * Every shape of an order, in the order of its life: asked for (OrderRequest), decided in Redis
 * (ReserveResult), queued (QueuedOrder, UserQueuedOrder), carried by the stream (OrderEntry),
 * written (NewOrder, OrderRow, UserOrderRow), due for cancellation (DueOrder, ClaimedOrder), changed
 * (OrderChange); shown as order-views.ts's OrderView and OrderListItem, the types of the
 * routes' answer schemas.
 */

/** An order's state as the API reports it: queued until the worker writes it to MySQL. */
export type OrderState = 'queued' | 'created' | 'paid' | 'used' | 'cancelled' | 'refunding' | 'refunded';

/** An order as the sale queues it: accepted in Redis, on its way to MySQL. */
export interface QueuedOrder {
  orderId: string;
  userId: string;
  voucherId: string;
  /** The user's slot 1..limit this order holds (reserve.lua assigns it; MySQL's unique key keeps it). */
  slot: number;
}

/** An order asked for: reserve.lua decides it and assigns its slot. */
export interface OrderRequest {
  orderId: string;
  userId: string;
  voucherId: string;
  /** The client's Idempotency-Key: a retry with it gets the order it was first accepted as. */
  idempotencyKey?: string;
}

/** A seckill voucher's sale as Redis holds it. */
export interface SaleState {
  voucherId: string;
  stock: number;
  begin: Date;
  end: Date;
  /** Units offered, sold or not (MySQL total_stock), when known. */
  total?: number | null;
  /** An administrator paused the sale. */
  suspended?: boolean;
  /** Live orders one user may hold (absent: 1). */
  limitPerUser?: number;
  /** Buckets the stock is sold from (absent: 1, one hash in the voucher's shard; docs/flows/seckill-buckets.md). */
  buckets?: number;
}

/** What reserve.lua decided for one order. */
export type ReserveOutcome = 'accepted' | 'not-started' | 'ended' | 'sold-out' | 'already-bought' | 'unknown-voucher' | 'frozen' | 'suspended' | 'replayed';

/** reserve.lua's decision with its value: the slot, the user's limit, or the order an Idempotency-Key was accepted as. */
export type ReserveResult =
  | { outcome: 'accepted'; slot: number; acceptedMs: number }
  | { outcome: 'already-bought'; limit: number }
  | { outcome: 'replayed'; orderId: string }
  | { outcome: Exclude<ReserveOutcome, 'accepted' | 'already-bought' | 'replayed'> };

/** An order accepted in Redis and not yet written to MySQL, as its user's list shows it. */
export interface UserQueuedOrder {
  orderId: string;
  voucherId: string;
  reservedAt: Date;
  slot: number;
}

/** A stream entry whose fields make a valid order. */
/** A queued order with the time the sale accepted it (Redis time, ms): what the stream carries. */
export type AcceptedOrder = QueuedOrder & { acceptedMs: number };

export interface OrderEntry {
  id: string;
  order: AcceptedOrder;
}

/** An order as MySQL takes it. */
export interface NewOrder {
  orderId: string;
  userId: string;
  voucherId: string;
  /** The user's slot 1..limit (reserve.lua): unique per (user, voucher, live); absent: 1. */
  slot?: number;
  /** When the sale accepted it (Redis time, ms): its create_time and the start of its payment window; absent: now. */
  acceptedMs?: number;
}

/** A row of tb_voucher_order. */
export type OrderRow = Selectable<VoucherOrderTable>;

/** A row of a user's order list: the order with its voucher's title, shop and price. */
export type UserOrderRow = Pick<OrderRow, 'id' | 'voucher_id' | 'status' | 'create_time' | 'pay_time'> &
  Pick<Selectable<VoucherTable>, 'title' | 'shop_id' | 'pay_value'>;

/** An order whose payment window ends at `dueMs` (acceptance + window): who bought what, and when it is due. */
export interface DueOrder extends QueuedOrder {
  dueMs: number;
}

/** An order of the Redis release queue as claimed: its sorted set member with it. */
export interface ClaimedOrder extends DueOrder {
  member: string;
}

/** One order's new state, as published to its owner's channel. */
export interface OrderChange {
  orderId: string;
  userId: string;
  voucherId: string;
  state: OrderState;
}
