import { BucketControls } from './bucket-controls.js';
import type { SaleContext } from './sale-context.js';
import type { BucketRepair, ControlOutcome, SaleControl, SaleRecord, SaleWindow } from './sale-scripts.js';
import { bucketsOf } from './transfers.js';

/**
 * An administrator's hand on a live sale in Redis: controls (stock, window, pause, limit) and a
 * reconciliation's freeze, repair and thaw, of one hash or of every bucket.
 */
export class SaleAdministration {
  /** An administrator's changes of a bucketed sale (bucket-controls.ts). */
  private readonly bucketControls: BucketControls;

  constructor(private readonly sale: SaleContext) {
    this.bucketControls = new BucketControls(sale.redis, sale.keys, sale.scripts);
  }

  /**
   * An administrator's change (control.lua): absolute total (stock), window and suspension; a
   * field left undefined is unchanged. `totalIfMissing` is MySQL's total before the change. A
   * bucketed sale (by its layout in Redis, else MySQL's `buckets`) is changed in every bucket
   * (bucket-controls.ts), the answer summed over them.
   */
  async control(voucherId: string, totalIfMissing: number, change: SaleControl, recordedBuckets = 1): Promise<ControlOutcome> {
    const { keys, layouts, scripts } = this.sale;
    const inRedis = keys.bucketLanes ? await layouts.bucketsOf(voucherId) : 1;
    // Redis's layout names where the keys are; without one (lost with its shard), MySQL's B still finds the buckets.
    const buckets = inRedis > 1 || !keys.bucketLanes ? inRedis : recordedBuckets;
    const outcome =
      buckets > 1 ? await this.bucketControls.apply(voucherId, buckets, totalIfMissing, change) : await scripts.control({ voucherId, totalIfMissing, change });
    if (outcome.outcome === 'applied') this.sale.onUnitsBack(voucherId);
    return outcome;
  }

  /** Freezes the sale for a repair (reserve.lua answers "frozen") until `freezeMs` pass or the token's owner thaws it. */
  async freeze(sale: SaleWindow, token: string, freezeMs: number): Promise<void> {
    await this.sale.scripts.freeze({ sale, token, freezeMs });
  }

  /** Lifts the freeze if it is still the token's; true if thawed. */
  async thaw(voucherId: string, token: string): Promise<boolean> {
    return this.sale.scripts.thaw({ voucherId, token });
  }

  /**
   * Rewrites a frozen sale's stock and buyer slots from MySQL's record and thaws it, in one step
   * (repair.lua). Returns the stock written, or -1 when the freeze had lapsed (nothing written).
   */
  async repair(sale: SaleWindow, token: string, record: SaleRecord): Promise<number> {
    const written = await this.sale.scripts.repair({ sale, token, record });
    if (written >= 0) this.sale.onUnitsBack(sale.voucherId);
    return written;
  }

  /** Freezes every bucket of a bucketed sale for a repair (freeze.lua on each: a missing one is created frozen). */
  async freezeBuckets(sale: SaleWindow, buckets: number, token: string, freezeMs: number): Promise<void> {
    await Promise.all(bucketsOf(buckets).map((bucket) => this.sale.scripts.freezeBucket({ sale, bucket, token, freezeMs })));
  }

  /** Lifts a repair's freeze from every bucket still frozen by `token`. */
  async thawBuckets(voucherId: string, buckets: number, token: string): Promise<void> {
    await Promise.all(bucketsOf(buckets).map((bucket) => this.sale.scripts.thawBucket({ voucherId, bucket, token })));
  }

  /** One bucket of a frozen sale rewritten (repair-bucket.lua): its stock, or -1 when the freeze had lapsed (nothing written). */
  async repairBucket(repair: BucketRepair): Promise<number> {
    const written = await this.sale.scripts.repairBucket(repair);
    if (written >= 0) this.sale.onUnitsBack(repair.sale.voucherId);
    return written;
  }
}
