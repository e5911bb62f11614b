/** What a bucketed sale is given (BucketedOptions) and what it measured (BucketedRow). */
import type { Check } from '../sale/index.js';

export interface BucketedOptions {
  buckets: number[];
  stock: number;
  connections: number;
  /**
   * Orders awaiting an answer at once per bucket (B × this in all): each bucket's lane then gets
   * batches as full as B = 1's one lane, as under a load that saturates the masters.
   */
  inFlight: number;
  /** Most orders one reserve.lua run decides (the app's SECKILL_RESERVE_BATCH_MAX). */
  batchMax: number;
  /** A sale that has not sold out by then fails the run. */
  timeoutMs?: number;
}

export interface MasterCpu {
  port: number;
  /** The voucher's buckets whose keys this master serves. */
  buckets: number[];
  /** Its CPU over the sale, per accepted order of the voucher, µs. */
  microsPerOrder: number;
}

export interface BucketedRow {
  buckets: number;
  /** Buyers spread evenly over the buckets (their ids in sequence), or nine in ten homing to bucket 0. */
  buyers: 'even' | 'skewed';
  stock: number;
  accepted: number;
  /** From the first order to the last unit: the driver's pace on this shared machine, not Redis'. */
  seconds: number;
  ordersPerSecond: number;
  masters: MasterCpu[];
  /** The three replicas' CPU together, per order, µs (on other hosts in a deployment: not in the ceiling). */
  replicasMicrosPerOrder: number;
  /** 1e6 / the busiest master's µs per order: accepted orders/s of the voucher when that master's core is full. */
  projectedCeiling: number;
  /** projectedCeiling / B = 1's in the same run. */
  ceilingVsOneBucket: number;
  /** reserve.lua attempts (each order's, a refill's retries included) per accepted order. */
  reservesPerOrder: number;
  /** Orders one reserve.lua run decided, on average (the batches as they went out). */
  ordersPerScriptRun: number;
  /** Transfers (take + give + settle: three script runs each) per 1,000 accepted orders. */
  refillsPer1000: number;
  /** Refill rounds (each a reading of every bucket, B HMGETs; one per empty bucket and store at a time) per 1,000 accepted orders. */
  bucketReadingsPer1000: number;
  /** 503 "retry" answers (units still moving after the store's patience), retried by the driver. */
  retries: number;
  lastPercent: LastPercent;
  checks: Check[];
  pass: boolean;
}

/** What the last ⌈stock / 100⌉ units took, from the answer that left that many to the one that took the last. */
export interface LastPercent {
  units: number;
  requests: number;
  reserves: number;
  refills: number;
  ms: number;
  /** The whole sale's time / 100: an average 1 %. */
  averageMs: number;
}
