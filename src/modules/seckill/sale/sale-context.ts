import type { RedisClient } from '../../../infra/redis.js';
import { homeBucket, type BucketRef, type SaleKeys } from '../keys.js';
import type { SaleScripts } from './sale-scripts.js';
import type { BucketTransfers } from './transfers.js';

/**
 * What the sale's parts share, made once by `buildSale` (sale.ts): the client and key layout, one
 * set of scripts, one cache of bucket layouts, the refills, and the hook told when units come back.
 */
export interface SaleContext {
  readonly redis: RedisClient;
  readonly keys: SaleKeys;
  readonly scripts: SaleScripts;
  readonly layouts: BucketLayouts;
  /** Refills and their sweep (transfers.ts). */
  readonly transfers: BucketTransfers;
  /**
   * Called after a part gave units back or changed a sale (release, control, repair): this
   * instance's sold-out memory forgets the voucher before the caller answers.
   */
  readonly onUnitsBack: (voucherId: string) => void;
}

/**
 * The B (buckets) of each voucher as this instance knows it, and the home bucket of a user's
 * orders by it: the one cache of layouts every part routes by.
 */
export class BucketLayouts {
  /**
   * The B of each bucketed voucher this instance has seen (absent: 1). A voucher is routed as if
   * B were 1 until an order finds no sale in its shard's hash (a bucketed voucher's hash holds
   * only its layout): then the layout is read and the order routed again. So a B = 1 order costs
   * nothing more, and an instance that routes by an older B (changed before the sale began:
   * bucket keys carry B in their names) finds no hash and reads the layout again.
   */
  private readonly layouts = new Map<string, number>();
  /**
   * The B of each voucher whose sale has begun, read from Redis once: fixed from then on (a change
   * of B is refused from 10 s before the begin), so the paths after an order's acceptance (release,
   * forgetQueued, isBuyer) read it once per voucher, not once per order.
   */
  private readonly fixedLayouts = new Map<string, number>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: SaleKeys,
  ) {}

  /** The voucher's B as Redis records it now (1 when its hash has no `buckets`, or is missing); remembered for routing. */
  async bucketsOf(voucherId: string): Promise<number> {
    const [raw, begin] = await this.redis.hmget(this.keys.voucher(voucherId).voucher, 'buckets', 'begin');
    const buckets = raw === null ? 1 : Number(raw);
    if (buckets > 1) this.layouts.set(voucherId, buckets);
    else this.layouts.delete(voucherId);
    if (begin !== null && Date.now() >= Number(begin)) this.fixedLayouts.set(voucherId, buckets);
    return buckets;
  }

  /** The B of a voucher that has orders: remembered once its sale has begun, else read; 1 where buckets are off. */
  async fixedBucketsOf(voucherId: string): Promise<number> {
    // A deployment without bucket lanes sells every voucher from one bucket: nothing to read per order.
    if (!this.keys.bucketLanes) return 1;
    return this.fixedLayouts.get(voucherId) ?? this.bucketsOf(voucherId);
  }

  /** The B this instance routes the voucher's orders by (1 unless it has seen a layout). */
  routedBuckets(voucherId: string): number {
    return this.layouts.get(voucherId) ?? 1;
  }

  /** The bucket that sells the user's orders of the voucher, by the routed B; undefined for B = 1. */
  homeOf(voucherId: string, userId: string, buckets = this.routedBuckets(voucherId)): BucketRef | undefined {
    return buckets > 1 ? { index: homeBucket(userId, buckets), of: buckets } : undefined;
  }

  /** A layout this instance published: its orders route by it at once. */
  published(voucherId: string, buckets: number): void {
    this.layouts.set(voucherId, buckets);
  }

  /** A layout this instance removed: its orders route as B = 1 until they find the next one. */
  unpublished(voucherId: string): void {
    this.layouts.delete(voucherId);
  }
}
