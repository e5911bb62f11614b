import type { KeyReader } from '../../../lib/near-cache/index.js';
import { SALE_STOCK_NEAR_REGION, type SaleKeys } from '../keys.js';
import { fetchLiveStock, holdsNothing, KEEP_LIVE_STOCK, type LiveStock } from './live-stock.js';
import { bucketsOf } from './transfers.js';

/**
 * The vouchers this instance knows are sold out, answered from memory: no Redis command, no
 * order id. The knowledge is the near cache's (src/lib/near-cache): after a sold-out answer the
 * sale's hashes (one, or each bucket's) are read through its tracked connection, and the voucher
 * is known sold out while every one of them is still held there and holds nothing. Redis pushes
 * the invalidation of a hash to every instance the moment anything writes it (a release, a raise,
 * a repair, a new publish: however units come back), so a flag is dropped on every instance as
 * soon as its invalidation arrives, not at a poll; the instance that brought units back (the
 * sale's `onUnitsBack`, sale-context.ts) drops its own flag before it answers.
 *
 * Across B > 1 buckets no two rounds of readings are needed: an entry is kept only if no
 * invalidation of its hash arrived while it was read, and is dropped by the next one, so entries
 * all held at once have each been unchanged since their reading: at the latest of those readings
 * every bucket held nothing at the same instant, and a unit on its way between buckets is in its
 * donor's pending until its recipient has it.
 *
 * With the near cache turned off (a PassThrough keeps nothing) the memory knows nothing and every
 * order goes to Redis, whose answer is always current.
 */
export class SoldOutMemory {
  /** voucherId → the B its hashes were read with. */
  private readonly flags = new Map<string, number>();

  constructor(
    private readonly keys: SaleKeys,
    private readonly reader: KeyReader,
    /** The B the instance routes a voucher by (BucketLayouts.routedBuckets); absent: every voucher has one bucket. */
    private readonly bucketsOf: (voucherId: string) => number = () => 1,
  ) {}

  /** Whether the voucher is sold out as far as the invalidations received so far say. */
  known(voucherId: string): boolean {
    const buckets = this.flags.get(voucherId);
    if (buckets === undefined) return false;
    const still =
      buckets === this.bucketsOf(voucherId) && this.hashesOf(voucherId, buckets).every((key) => holdsNothing(this.reader.peek(key) as LiveStock | undefined));
    if (!still) this.flags.delete(voucherId);
    return still;
  }

  /** After a sold-out answer from Redis: reads the sale's hashes through the near cache and flags the voucher if they hold nothing. */
  async remember(voucherId: string): Promise<void> {
    const buckets = this.bucketsOf(voucherId);
    const keys = this.hashesOf(voucherId, buckets);
    const readings = await Promise.all(keys.map((key) => this.reader.read(SALE_STOCK_NEAR_REGION, key, fetchLiveStock, KEEP_LIVE_STOCK)));
    // Flagged only if the near cache kept every reading: one it did not keep may be stale already.
    if (readings.every(holdsNothing) && keys.every((key) => this.reader.peek(key) !== undefined)) this.flags.set(voucherId, buckets);
  }

  /** This instance gave units back or reopened the sale: its next order goes to Redis at once, before the invalidation arrives. */
  forget(voucherId: string): void {
    this.flags.delete(voucherId);
  }

  private hashesOf(voucherId: string, buckets: number): string[] {
    if (buckets <= 1) return [this.keys.voucher(voucherId).voucher];
    return bucketsOf(buckets).map((bucket) => this.keys.bucket(voucherId, bucket).voucher);
  }
}
