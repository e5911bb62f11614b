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
}

/** What reserve.lua decided for one order. */
export type ReserveOutcome = 'accepted' | 'not-started' | 'ended' | 'sold-out' | 'already-bought' | 'unknown-voucher' | 'paused' | 'suspended' | 'replayed';

/** reserve.lua's decision with its value: the slot, the user's limit, or the order an Idempotency-Key was accepted as. */
export type ReserveResult =
  | { outcome: 'accepted'; slot: number }
  | { outcome: 'already-bought'; limit: number }
  | { outcome: 'replayed'; orderId: string }
  | { outcome: Exclude<ReserveOutcome, 'accepted' | 'already-bought' | 'replayed'> };
