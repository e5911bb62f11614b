/** An order as the sale queues it: accepted in Redis, on its way to MySQL. */
export interface QueuedOrder {
  orderId: string;
  userId: string;
  voucherId: string;
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
}

/** What reserve.lua decided for one order. */
export type ReserveOutcome = 'accepted' | 'not-started' | 'ended' | 'sold-out' | 'already-bought' | 'unknown-voucher' | 'paused' | 'suspended';
