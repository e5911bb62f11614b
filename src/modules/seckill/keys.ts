/**
 * Every Redis key of the sale, in one place (read with the Lua headers in lua/).
 *
 * The sale's own keys share a hash tag per shard, `{seckill:N}` with N = voucherId mod shards:
 * every key one script touches (a voucher's stock, its buyers, its shard's stream) lives in one
 * Redis Cluster slot, and different vouchers still spread over the cluster. The shard count is
 * fixed for a deployment (SECKILL_STREAM_SHARDS): changing it while orders are queued strands them.
 *
 *   {seckill:N}:voucher:{voucherId}   hash {stock, begin, end, restocks[, total, suspended, paused_until, paused_by, paused_created]}
 *   {seckill:N}:buyers:{voucherId}    set of user ids with a live order
 *   {seckill:N}:orders                stream of accepted orders, read by the group `order-writers`
 *   {seckill:N}:orders:dead           stream of dead letters (entries that kept failing)
 *   {seckill:N}:queued                hash orderId -> "userId:voucherId", accepted and not yet in MySQL
 *   {seckill:N}:in-flight             sorted set orderId -> reserve time (ms): sync orders whose request writes MySQL
 *   {seckill:N}:released:{orderId}    string marker: this order's unit was given back (7 days)
 *
 * Keys the building blocks derive from names the sale gives them (see those libraries):
 *   icr:order:{yyyyMMdd}              order id sequence (src/lib/id, prefix ORDER_ID_PREFIX)
 *   lock:{order:{userId}}[:fence]     the sync strategy's per-user lock and its fencing counter (src/lib/lock)
 *   rl:order:user:{userId}, rl:order:ip:{ip}, rl:sale:{voucherId}   order limits (src/lib/rate-limit)
 */

/** The consumer group of the order streams. */
export const ORDER_GROUP = 'order-writers';

/** A sale's stock hash and buyer set expire this long after the sale ends. */
export const SALE_KEYS_KEPT_AFTER_END_MS = 7 * 24 * 3600_000;

/** How long the "already released" marker of an order is kept (a retry comes within minutes). */
export const RELEASE_MARKER_TTL_SECONDS = 7 * 24 * 3600;

/** Names handed to the building blocks, which build their keys from them (above). */
export const ORDER_ID_PREFIX = 'order';
export const userOrderLock = (userId: string): string => `order:${userId}`;
export const LIMIT_NAMES = { perUser: 'order:user', perIp: 'order:ip', admission: 'sale' } as const;

export const shardTag = (shard: number): string => `{seckill:${shard}}`;

/** The keys of one shard: its stream, dead letters and queued orders. */
export interface ShardKeys {
  tag: string;
  stream: string;
  deadLetters: string;
  queued: string;
  inFlight: string;
}

/** The keys of one voucher's sale: its hash and buyers, and its shard's keys. */
export interface VoucherKeys extends ShardKeys {
  voucher: string;
  buyers: string;
}

/** The key layout of a deployment with `shards` order streams. */
export class SaleKeys {
  constructor(readonly shards: number) {}

  shardOf(voucherId: string): number {
    return Number(BigInt(voucherId) % BigInt(this.shards));
  }

  /** 0 .. shards-1. */
  allShards(): number[] {
    return Array.from({ length: this.shards }, (_, shard) => shard);
  }

  shard(shard: number): ShardKeys {
    const tag = shardTag(shard);
    return { tag, stream: `${tag}:orders`, deadLetters: `${tag}:orders:dead`, queued: `${tag}:queued`, inFlight: `${tag}:in-flight` };
  }

  voucher(voucherId: string): VoucherKeys {
    const shardKeys = this.shard(this.shardOf(voucherId));
    return { ...shardKeys, voucher: `${shardKeys.tag}:voucher:${voucherId}`, buyers: `${shardKeys.tag}:buyers:${voucherId}` };
  }

  /** The marker release.lua sets when an order's unit is given back. */
  releaseMarker(order: { orderId: string; voucherId: string }): string {
    return `${this.shard(this.shardOf(order.voucherId)).tag}:released:${order.orderId}`;
  }
}
