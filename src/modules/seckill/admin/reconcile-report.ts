/**
 * What reconciliation reads and reports (reconcile.ts for a voucher's one hash,
 * reconcile-buckets.ts for a voucher sold from buckets): the MySQL side it compares against, the
 * drift it finds and what a repair did.
 */

export interface VoucherDrift {
  voucherId: string;
  mysqlStock: number;
  redisStock: number | null;
  missingBuyers: string[];
  extraBuyers: string[];
  /** The stock Redis should hold (MySQL stock less queued and unreleased orders). */
  expectedStock: number;
  /** A voucher sold from B > 1 buckets: B, and the buckets whose hash is gone (redisStock sums the others'). */
  buckets?: number;
  missingBuckets?: number[];
}

/**
 * A refill of a bucketed sale taken from its donor and not yet settled: under way when young, left
 * by a crash when older than the sweep's 10 s (the sweep ends it; a repair ends it too). Its units
 * count once: in the donor's pending, or in the recipient's stock once `given`.
 */
export interface PendingTransferReport {
  voucherId: string;
  transferId: string;
  from: number;
  to: number;
  units: number;
  /** Since its take, by this machine's clock. */
  ageMs: number;
  given: boolean;
}

export interface ReconcileReport {
  vouchers: number;
  drifted: VoucherDrift[];
  repaired: number;
  /** Drifted vouchers a repair gave up on (queued orders did not drain in time, freeze lapsed). */
  skipped: Array<{ voucherId: string; reason: string }>;
  /**
   * Vouchers not compared at all, with why (their Redis state cannot be read as their layout is
   * recorded): neither drifted nor clean. Present only when there are some.
   */
  unchecked?: Array<{ voucherId: string; reason: string }>;
  /** Transfers of bucketed sales found pending by the check (present only when there are some): not drift. */
  pendingTransfers?: PendingTransferReport[];
}

export interface SeckillRow {
  voucherId: string;
  stock: number;
  begin: Date;
  end: Date;
  /** Redis buckets the stock is sold from (absent: 1). */
  buckets?: number;
}

export interface MysqlSnapshot {
  stock: number;
  limitPerUser: number;
  /** userId → bitmask of the slots of its live orders. */
  liveSlots: Map<string, number>;
  /** Cancelled orders not yet released in Redis (stock_released = 0). */
  unreleased: Array<{ orderId: string; userId: string; slot: number }>;
  /** Which of the queued order ids are MySQL rows already. */
  written: Set<string>;
  /** Orders no longer live: changes when a cancellation commits (repair re-checks it). */
  notLive: number;
}

/** What a repair did for one voucher. */
export interface RepairResult {
  drift: VoucherDrift | null;
  repaired: boolean;
  skipped?: string;
}
