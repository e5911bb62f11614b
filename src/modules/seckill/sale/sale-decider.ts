import type { OrderRequest, ReserveResult, SaleState } from '../types.js';
import type { BucketRouter } from './bucket-router.js';
import type { BucketLayouts } from './sale-context.js';
import type { SalePublisher } from './sale-publisher.js';
import type { ReserveMode } from './sale-scripts.js';

/** A voucher's sale as MySQL records it, for a voucher Redis does not know (null: no such sale). */
export type SaleSource = (voucherId: string) => Promise<SaleState | null>;

/**
 * Decides an order in Redis, the entry of every order: routed to the bucket that sells it
 * (bucket-router.ts), in its shard's next batch (reserve-batches.ts), reserve.lua deciding it.
 * Redis decides; MySQL records.
 */
export class SaleDecider {
  constructor(
    private readonly layouts: BucketLayouts,
    private readonly router: BucketRouter,
    private readonly publisher: SalePublisher,
    /** Where a sale Redis does not know is found; without it such an order is `unknown-voucher`. */
    private readonly source?: SaleSource,
  ) {}

  /**
   * An order decided (reserve.lua): `stream` queues an accepted order for the worker, `hold`
   * keeps it in flight for the sync strategy, which writes MySQL and then settles it, releases it
   * (refused by MySQL) or hands it off (failed, or unknown): sale-settlement.ts. A voucher Redis
   * does not know (created while Redis was away, lost by Redis, or long over) is published from
   * the source, unless its sale is over, and decided once more. A failed script call throws
   * OutcomeUnknown: the order may have been accepted, so it is never answered as refused.
   */
  async decide(order: OrderRequest, mode: ReserveMode = 'stream'): Promise<ReserveResult> {
    let published = false;
    for (;;) {
      const result = await this.router.reserve(order, mode);
      // Once published from the source, the voucher's answer stands, whatever it is.
      if (result.outcome !== 'unknown-voucher' || published) return result;
      // A bucketed voucher routed by an older (or no) layout: route by the one Redis records.
      const routed = this.layouts.routedBuckets(order.voucherId);
      if ((await this.layouts.bucketsOf(order.voucherId)) !== routed) continue;
      if (!this.source) return result;
      const sale = await this.source(order.voucherId);
      if (!sale) return result;
      if (Date.now() >= sale.end.getTime()) return { outcome: 'ended' };
      await this.publisher.publish(sale);
      await this.layouts.bucketsOf(order.voucherId);
      published = true;
    }
  }
}
