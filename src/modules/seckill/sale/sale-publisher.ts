import type { SaleState } from '../types.js';
import type { SaleContext } from './sale-context.js';
import { bucketsOf, shareOf } from './transfers.js';

/** Puts a sale into Redis and takes it out: its hash (or its buckets' hashes) and layout record. */
export class SalePublisher {
  constructor(private readonly sale: SaleContext) {}

  /**
   * Publishes stock and window unless the voucher is already in Redis; true if published now. A
   * voucher of B > 1 buckets: each bucket with its share of the stock (⌊S/B⌋, the remainder to the
   * first ones) and its part of the total (that stock plus its share of the units sold before the
   * publish: the parts add up to the total, bucket-controls.ts), then the layout record in its
   * shard's hash.
   */
  async publish(state: SaleState): Promise<boolean> {
    const { scripts, layouts } = this.sale;
    const buckets = state.buckets ?? 1;
    if (buckets <= 1) return scripts.publish(state);
    const { total } = state;
    const published = await Promise.all(
      bucketsOf(buckets).map((bucket) => {
        const stock = shareOf(state.stock, bucket);
        return scripts.publishBucket({
          sale: state,
          bucket,
          stock,
          total: total === undefined || total === null ? undefined : stock + shareOf(Math.max(0, total - state.stock), bucket),
        });
      }),
    );
    if (!(await scripts.publishLayout({ sale: state, buckets }))) {
      throw new Error(`voucher ${state.voucherId} is published with one bucket in Redis: unpublish it before publishing ${buckets}`);
    }
    layouts.published(state.voucherId, buckets);
    return published.some(Boolean);
  }

  /**
   * Removes a sale's keys of the layout `buckets` from Redis (its hash and buyers, each bucket's,
   * the layout record): for a change of B before the sale begins (sale-controls.ts), followed by
   * `publish` of the new layout. Orders routed meanwhile find no sale and read the layout again.
   */
  async unpublish(voucherId: string, buckets: number): Promise<void> {
    const { redis, keys } = this.sale;
    if (buckets > 1) {
      await Promise.all(bucketsOf(buckets).map((bucket) => redis.del(keys.bucket(voucherId, bucket).voucher, keys.bucket(voucherId, bucket).buyers)));
    }
    const { voucher, buyers } = keys.voucher(voucherId);
    await redis.del(voucher, buyers);
    this.sale.layouts.unpublished(voucherId);
  }

  /** Writes a bucketed sale's layout record (publish-layout.lua); false when its shard's hash holds a one-bucket sale. */
  async publishLayout(sale: SaleState, buckets: number): Promise<boolean> {
    return this.sale.scripts.publishLayout({ sale, buckets });
  }
}
