import type { KeyReader } from '../../../lib/near-cache/index.js';
import { SALE_STOCK_NEAR_REGION } from '../keys.js';
import type { SaleState, UserQueuedOrder } from '../types.js';
import type { SaleContext } from './sale-context.js';
import { fetchLiveStock, KEEP_LIVE_STOCK } from './live-stock.js';
import { bucketsOf, readBuckets } from './transfers.js';

/** What the pages and the controls read of a sale: its state and stock, a user's queued orders, whether a user bought. */
export class SaleReads {
  constructor(private readonly sale: Pick<SaleContext, 'redis' | 'keys' | 'scripts' | 'layouts'>) {}

  async read(voucherId: string): Promise<SaleState | null> {
    const fields = await this.sale.redis.hgetall(this.sale.keys.voucher(voucherId).voucher);
    if (fields.stock === undefined) return null;
    return { voucherId, stock: Number(fields.stock), begin: new Date(Number(fields.begin)), end: new Date(Number(fields.end)) };
  }

  /** The voucher's stock in Redis (a bucketed one's: the sum over its buckets, pending transfers included); null if Redis does not know the voucher. */
  async stockOf(voucherId: string): Promise<number | null> {
    const { redis, keys } = this.sale;
    const [stock, buckets] = await redis.hmget(keys.voucher(voucherId).voucher, 'stock', 'buckets');
    if (buckets !== null && Number(buckets) > 1) {
      const readings = await readBuckets(redis, keys, voucherId, Number(buckets));
      return readings.reduce((sum, reading) => sum + reading.stock + reading.pending, 0);
    }
    return stock === null ? null : Number(stock);
  }

  /**
   * The voucher's stock in Redis read through `reader` (the process's near cache): kept in memory
   * until Redis says the sale hash changed (an order, a release, a control, a repair), or its
   * PTTL runs out; null if Redis does not know the voucher (not kept: the first order or a
   * restart publishes it).
   */
  async liveStock(voucherId: string, reader: KeyReader): Promise<number | null> {
    const { keys } = this.sale;
    const sale = await reader.read(SALE_STOCK_NEAR_REGION, keys.voucher(voucherId).voucher, fetchLiveStock, KEEP_LIVE_STOCK);
    if (sale.buckets <= 1 || !keys.bucketLanes) return sale.stock;
    // A bucketed sale: its layout record (kept: only a window change writes it), then each bucket's
    // stock and pending units (unsold: on their way between buckets), each its own near cache entry.
    const readings = await Promise.all(
      bucketsOf(sale.buckets).map((bucket) => reader.read(SALE_STOCK_NEAR_REGION, keys.bucket(voucherId, bucket).voucher, fetchLiveStock, KEEP_LIVE_STOCK)),
    );
    const held = readings.filter((reading) => reading.stock !== null);
    return held.length === 0 ? null : held.reduce((sum, reading) => sum + reading.stock! + reading.pending, 0);
  }

  /**
   * The user's orders accepted in Redis and not yet in MySQL, newest first (ids rise with the
   * time of acceptance): one script per shard on the user's own list (queued-of-user.lua), never
   * a scan of the shards' queued hashes.
   */
  async queuedOfUser(userId: string): Promise<UserQueuedOrder[]> {
    const { keys, scripts } = this.sale;
    const perShard = await Promise.all(keys.allShards().map((shard) => scripts.queuedOfUser({ shard, userId })));
    return perShard.flat().sort((a, b) => (BigInt(a.orderId) < BigInt(b.orderId) ? 1 : -1));
  }

  /** Whether the user holds one of the voucher's units in Redis (an order accepted and not cancelled). */
  async isBuyer(voucherId: string, userId: string): Promise<boolean> {
    const { redis, keys, layouts } = this.sale;
    const buyers = keys.saleOf(voucherId, layouts.homeOf(voucherId, userId, await layouts.fixedBucketsOf(voucherId))).buyers;
    return (await redis.hexists(buyers, userId)) === 1;
  }
}
