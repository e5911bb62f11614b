import { queuedByUserMember, type SaleKeys } from '../keys.js';
import type { QueuedOrder } from '../types.js';
import type { SaleContext } from './sale-context.js';

/**
 * What becomes of an accepted order in Redis once it is decided: written (no longer queued, nor
 * in flight), handed to the stream, or given back (its unit and slot). The writers' part of the
 * sale: the worker, the RabbitMQ path, the sync strategy and the canceller.
 */
export class SaleSettlement {
  constructor(private readonly sale: SaleContext) {}

  get keys(): SaleKeys {
    return this.sale.keys;
  }

  /** The order stream (shard, or bucket lane) an order of the voucher was accepted into. */
  async streamShardOf(order: QueuedOrder): Promise<number> {
    const { keys, layouts } = this.sale;
    const home = layouts.homeOf(order.voucherId, order.userId, await layouts.fixedBucketsOf(order.voucherId));
    return home ? keys.laneShard(home) : keys.shardOf(order.voucherId);
  }

  /**
   * Orders are in MySQL (written off the stream's path, e.g. from RabbitMQ): no longer queued, by
   * order nor by user. One MULTI per stream (a shard's, or a bucketed order's lane: its keys share
   * a hash slot) for all of them.
   */
  async forgetQueued(orders: readonly QueuedOrder[]): Promise<void> {
    const byShard = new Map<number, QueuedOrder[]>();
    for (const order of orders) {
      const shard = await this.streamShardOf(order);
      const ofShard = byShard.get(shard);
      if (ofShard) ofShard.push(order);
      else byShard.set(shard, [order]);
    }
    await Promise.all(
      [...byShard].map(async ([shard, ofShard]) => {
        const { queued, queuedByUser } = this.sale.keys.shard(shard);
        const replies = await this.sale.redis
          .multi()
          .hdel(queued, ...ofShard.map((order) => order.orderId))
          .zrem(queuedByUser, ...ofShard.map(queuedByUserMember))
          .exec();
        const failure = replies?.find(([error]) => error);
        if (failure) throw failure[0]!;
      }),
    );
  }

  /** A held order is in MySQL: no longer in flight nor queued. */
  async settle(order: QueuedOrder): Promise<void> {
    const { redis, keys, layouts } = this.sale;
    const { inFlight, queued, queuedByUser } = keys.saleOf(order.voucherId, layouts.homeOf(order.voucherId, order.userId));
    const replies = await redis.multi().zrem(inFlight, order.orderId).hdel(queued, order.orderId).zrem(queuedByUser, queuedByUserMember(order)).exec();
    const failure = replies?.find(([error]) => error);
    if (failure) throw failure[0]!;
  }

  /** Streams a held order for the worker to write (hand-off.lua); false if it was not held any more. */
  async handOff(order: QueuedOrder): Promise<boolean> {
    const { keys, layouts, scripts } = this.sale;
    const home = layouts.homeOf(order.voucherId, order.userId);
    const shard = home ? keys.laneShard(home) : keys.shardOf(order.voucherId);
    return (await scripts.handOff({ shard, orderId: order.orderId })) === 1;
  }

  /** Streams the shard's orders held longer than `ageMs` (their request died); returns how many. */
  async handOffStale(shard: number, ageMs: number, limit: number): Promise<number> {
    return this.sale.scripts.handOff({ shard, ageMs, limit });
  }

  /**
   * Gives an order's unit and slot back, exactly once per order (release.lua), to the bucket that
   * sold it: the user's home bucket, by the B Redis records (its instance may never have routed
   * an order of the voucher).
   */
  async release(order: QueuedOrder): Promise<boolean> {
    const { redis, keys, layouts, scripts } = this.sale;
    const bucket = layouts.homeOf(order.voucherId, order.userId, await layouts.fixedBucketsOf(order.voucherId));
    const released = await scripts.release(bucket ? { order, bucket } : { order });
    if (released) this.sale.onUnitsBack(order.voucherId);
    // A held order given back is no longer in flight (hand-off.lua would drop it anyway: not queued).
    await redis.zrem(keys.saleOf(order.voucherId, bucket).inFlight, order.orderId);
    return released;
  }
}
