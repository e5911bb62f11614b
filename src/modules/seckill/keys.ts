import calculateSlot from 'cluster-key-slot';

/**
 * Every Redis key of the sale, in one place: the docs link here (read with the Lua headers in each
 * room's lua/).
 *
 * The sale's own keys share a hash tag per shard, `{seckill:N}` with N = voucherId mod shards:
 * every key one script touches (a voucher's stock, its buyers, its shard's stream) lives in one
 * Redis Cluster hash slot, and different vouchers still spread over the cluster. The shard count is
 * fixed for a deployment (SECKILL_STREAM_SHARDS): changing it while orders are queued strands them.
 *
 *   {seckill:N}:voucher:{voucherId}   (and buyer-slots: 7 days after the sale's end) hash {stock, begin, end, restocks[, limit, total, suspended, frozen_until, frozen_by, frozen_created]}
 *                                     suspended: an administrator's pause (control.lua); frozen_*: a repair's
 *                                     self-lapsing freeze (freeze.lua); restocks: the version the sold-out rule across buckets reads
 *   {seckill:N}:buyer-slots:{voucherId}  hash userId -> bitmask of the slots 1..limit its live orders hold
 *   {seckill:N}:orders                stream of accepted orders, read by the group `order-writers`: an entry per
 *                                     reserve batch {acceptedMs, orders "orderId:userId:voucherId:slot,..."}, or
 *                                     one order's {orderId, userId, voucherId, slot, acceptedMs} (hand-off.lua);
 *                                     trimmed every 60 s to what the group acknowledged
 *   {seckill:N}:orders:dead           stream of dead letters, one per order given up: its fields + sourceId
 *                                     (its entry), deliveries, error
 *   {seckill:N}:queued                hash orderId -> "userId:voucherId:slot:acceptedMs", accepted and not yet in MySQL
 *   {seckill:N}:queued-by-user        sorted set, all scores 0, members "userId:orderId": the queued orders by user
 *                                     (ZRANGEBYLEX "[userId:" "(userId;" lists one user's), written per batch
 *                                     by reserve.lua, removed with the queued entry (members left behind are
 *                                     dropped when read)
 *   {seckill:N}:idem:{userId}:{key}   string orderId: the order an Idempotency-Key was accepted as (1 day)
 *   {seckill:N}:in-flight             sorted set orderId -> reserve time (ms): sync orders whose request writes MySQL
 *   {seckill:N}:released:{orderId}    string marker: this order's unit was given back (7 days)
 *
 * A voucher sold from B > 1 buckets (docs/flows/seckill-buckets.md): its shard's voucher hash holds only
 * {buckets, begin, end} (its layout), and each bucket b lives in a bucket lane L = ⌊(b + ½)·8/B⌋, a
 * shard of its own after the N ones (its tag {seckill:laneL.salt}, placed below; the same stream, dead
 * letters, queued, queued-by-user, in-flight, idem and released keys as a shard, under the lane's tag):
 *   {lane}:voucher:{voucherId}:b{b}of{B}       hash as the voucher hash above, plus pending: units its
 *                                              refills took and have not settled; its total is its part
 *                                              of the sale's (Σ over the buckets: sale/bucket-controls.ts)
 *   {lane}:buyer-slots:{voucherId}:b{b}of{B}   hash userId -> slot mask, of the users homing to bucket b
 *   {lane}:transfers                           hash transferId -> "voucherId:from:of:to:units:takenMs": refills
 *                                              taken from this lane's buckets, not yet settled (the sweep's)
 *   {lane}:transfer-in:{transferId}            string "given" or "returned": the transfer's outcome in its
 *                                              recipient (7 days)
 *
 * Keys the building blocks derive from names the sale gives them (see those libraries):
 *   icr:order:{yyyyMMdd}              order id sequence (src/lib/id, prefix ORDER_ID_PREFIX)
 *   lock:{order:{userId}}[:fence]     the sync strategy's per-user lock and its fencing counter (src/lib/lock)
 *   rl:order:user:{userId}, rl:order:ip:{ip}, rl:sale:{voucherId}   order limits (src/lib/rate-limit)
 *
 * Per user, outside the sale's hash slots (an Idempotency-Key is bound to one voucher before reserve.lua runs):
 *   seckill:idem:{userId}:{key}       string voucherId (1 day)
 *
 * The voucher list of a shop (`GET /voucher/list/{shopId}`, vouchers/voucher-service.ts), outside the sale's hash slots:
 *   cache:voucher-list:{shopId}       JSON of the shop's vouchers as listed, seckill ones with MySQL's stock (the
 *                                     fallback), or the null marker of a shop without vouchers (src/lib/cache,
 *                                     VOUCHER_LIST_CACHE_TTL_SECONDS; invalidated by voucher creation and sale controls)
 *   lock:{voucher-list:{shopId}}      its rebuild lock (src/lib/lock)
 * Both it and the sale hash's stock (`{seckill:N}:voucher:{voucherId}`) are read through the process's near
 * cache (regions VOUCHER_LIST_CACHE_NAME and SALE_STOCK_NEAR_REGION), kept coherent by Redis client tracking.
 */

/** The cache of a shop's voucher list: its name in the cache library (stats, near cache region, lock) and its key. */
export const VOUCHER_LIST_CACHE_NAME = 'voucher-list';
export const voucherListCacheKey = (shopId: string): string => `cache:voucher-list:${shopId}`;

/** The near cache region holding the live stock of the sale hashes the voucher lists read. */
export const SALE_STOCK_NEAR_REGION = 'voucher-sale';

/** The consumer group of the order streams. */
export const ORDER_GROUP = 'order-writers';

/** A sale's stock hash and buyer set expire this long after the sale ends. */
export const SALE_KEYS_KEPT_AFTER_END_MS = 7 * 24 * 3600_000;

/** A voucher's default and highest limit of live orders per user (slots are bits of a 32-bit Lua bitmask). */
export const DEFAULT_LIMIT_PER_USER = 1;
export const MAX_LIMIT_PER_USER = 30;

/** How long an Idempotency-Key's binding and its order id are kept. */
export const IDEMPOTENCY_TTL_MS = 24 * 3600_000;

/** How long the "already released" marker of an order is kept (a retry comes within minutes). */
export const RELEASE_MARKER_TTL_SECONDS = 7 * 24 * 3600;

/** Names handed to the building blocks, which build their keys from them (above). */
export const ORDER_ID_PREFIX = 'order';
export const userOrderLock = (userId: string): string => `order:${userId}`;
export const LIMIT_NAMES = { perUser: 'order:user', perIp: 'order:ip', admission: 'sale' } as const;

/**
 * The purchase gate and order events (gate/, events/):
 *   seckill:captcha:{signature}            a solved captcha challenge (ALTCHA), kept until a minute past its expiry:
 *                                          each buys one token (gate/captcha-challenges.ts)
 *   seckill:purchase-token:{nonce}         hash {key, attempts}: a purchase token that bought an order (its
 *                                          Idempotency-Key or ''), kept until a minute past its expiry (gate/spent-tokens.ts)
 *   rl:gate:user:{userId}                  token and captcha requests per user (src/lib/rate-limit)
 *   order-events:{userId}                  pub/sub channel of the user's order state changes (key prefix included)
 *   order-streams:{userId}                 sorted set stream id -> end of lease (ms): the seats of the user's open
 *                                          event streams (events/stream-seats.ts, lua/stream-seat.lua)
 */
export const usedCaptchaKey = (challengeSignature: string): string => `seckill:captcha:${challengeSignature}`;
export const purchaseTokenKey = (nonce: string): string => `seckill:purchase-token:${nonce}`;
export const GATE_LIMIT_NAME = 'gate:user';
/** The one pub/sub channel of order state changes (a JSON array of changes per message), under the key prefix. */
export const orderEventsChannel = (keyPrefix: string): string => `${keyPrefix}order-events`;
export const orderStreamSeatsKey = (userId: string): string => `order-streams:${userId}`;

export const shardTag = (shard: number): string => `{seckill:${shard}}`;

/** The keys of one shard: its stream, dead letters and queued orders. */
export interface ShardKeys {
  tag: string;
  stream: string;
  deadLetters: string;
  queued: string;
  queuedByUser: string;
  inFlight: string;
}

/** The keys of one voucher's sale: its hash and buyers, and its shard's keys. */
export interface VoucherKeys extends ShardKeys {
  voucher: string;
  buyers: string;
}

/**
 * Bucket lanes: a voucher sold from B > 1 buckets (issue 30) keeps each bucket's stock, buyers and
 * orders under a lane's hash tag, one of BUCKET_LANES tags whose Cluster hash slots sit near the
 * centres of the eighths of the slot space (lane k: slot 1024 + 2048k, within ±LANE_SLOT_SPREAD).
 * Bucket b of B uses lane ⌊(b + ½)·8/B⌋: B points spread evenly over the slot space. A Cluster made
 * by `redis-cli --cluster create` gives its M masters equal contiguous ranges, and for every
 * B ≤ M ≤ 8 but one those lanes fall in B different ranges (B = 6 on 7 masters: 5;
 * test/unit/modules/seckill/bucket-lanes.test.ts checks each pair), so B buckets land on B masters, with no topology read at run time: the layout
 * stays a pure function of (voucher, B), which a resharding cannot change under a running sale.
 * The lanes are shared by every bucketed voucher (8 more order streams per deployment, not 8 per
 * voucher), and are numbered as shards after the `shards` ones, so every loop over
 * `allShards()` (the worker, the relay, a user's queued orders) reads them too.
 */
export const BUCKET_LANES = 8;
/** A voucher's buckets: 1 (today's layout) up to BUCKET_LANES. */
export const MAX_BUCKETS = BUCKET_LANES;
const SLOTS = 16_384;
const LANE_SLOT_SPREAD = 128;

/** The lane tags, found once: the first salt whose tag's slot is within LANE_SLOT_SPREAD of its eighth's centre. */
const LANE_TAGS: readonly string[] = Array.from({ length: BUCKET_LANES }, (_, lane) => {
  const centre = ((2 * lane + 1) * SLOTS) / (2 * BUCKET_LANES);
  for (let salt = 0; ; salt += 1) {
    const body = `seckill:lane${lane}.${salt}`;
    if (Math.abs(calculateSlot(body) - centre) <= LANE_SLOT_SPREAD) return `{${body}}`;
  }
});

/** The lane (0..BUCKET_LANES-1) of bucket `bucket` of `buckets`. */
export const laneOf = (bucket: number, buckets: number): number => Math.floor(((bucket + 0.5) * BUCKET_LANES) / buckets);

/** A bucket of a voucher sold from `of` buckets. */
export interface BucketRef {
  index: number;
  of: number;
}

/**
 * A user's home bucket among `buckets`: FNV-1a of the user id, mod buckets. Every order of a user
 * for a voucher goes there, so the per-user limit and the Idempotency-Key stay one-slot checks,
 * and an unpaid order's unit goes back to the bucket that sold it.
 */
export function homeBucket(userId: string, buckets: number): number {
  if (buckets <= 1) return 0;
  let hash = 0x811c9dc5;
  for (let i = 0; i < userId.length; i += 1) hash = Math.imul(hash ^ userId.charCodeAt(i), 0x01000193) >>> 0;
  return hash % buckets;
}

/** Up to 15 digits: a safe integer, so Number's remainder is exact (and far cheaper than BigInt's). */
const SAFE_DIGITS = /^\d{1,15}$/;

function shardKeysOf(shard: number, tag = shardTag(shard)): ShardKeys {
  return {
    tag,
    stream: `${tag}:orders`,
    deadLetters: `${tag}:orders:dead`,
    queued: `${tag}:queued`,
    queuedByUser: `${tag}:queued-by-user`,
    inFlight: `${tag}:in-flight`,
  };
}

/** An order's member in its shard's `queued-by-user` set. */
export const queuedByUserMember = (order: { userId: string; orderId: string }): string => `${order.userId}:${order.orderId}`;

/** The key layout of a deployment with `shards` order streams. */
export class SaleKeys {
  /** Built once: every order asks for its shard's keys. */
  private readonly shardKeys: readonly ShardKeys[];

  /** Shards plus, when buckets are on, the BUCKET_LANES lanes (numbered shards .. shards+7). */
  private readonly streams: number;

  /** `bucketLanes` false: no voucher may have more than one bucket (SECKILL_MAX_BUCKETS = 1), no lane streams. */
  constructor(
    readonly shards: number,
    readonly bucketLanes = false,
  ) {
    this.streams = shards + (bucketLanes ? BUCKET_LANES : 0);
    this.shardKeys = Array.from({ length: this.streams }, (_, shard) =>
      Object.freeze(shard < shards ? shardKeysOf(shard) : shardKeysOf(shard, LANE_TAGS[shard - shards])),
    );
  }

  /** The shard number of a bucket's lane (its stream and queued orders). */
  laneShard(bucket: BucketRef): number {
    if (!this.bucketLanes) throw new Error('buckets are off in this deployment (SECKILL_MAX_BUCKETS = 1)');
    return this.shards + laneOf(bucket.index, bucket.of);
  }

  /**
   * One bucket's keys: its hash and buyers under the lane's tag, named with B as well as b, so an
   * instance still routing by an older B (changed before the sale began) finds no hash and reads
   * the layout again, rather than deciding in a bucket of another layout.
   */
  bucket(voucherId: string, bucket: BucketRef): VoucherKeys {
    const shardKeys = this.shard(this.laneShard(bucket));
    const name = `${voucherId}:b${bucket.index}of${bucket.of}`;
    return { ...shardKeys, voucher: `${shardKeys.tag}:voucher:${name}`, buyers: `${shardKeys.tag}:buyer-slots:${name}` };
  }

  /** The keys an order is decided in: its voucher's shard, or its bucket's lane. */
  saleOf(voucherId: string, bucket?: BucketRef): VoucherKeys {
    return bucket ? this.bucket(voucherId, bucket) : this.voucher(voucherId);
  }

  /** The lane's refills under way: transferId -> "voucherId:from:of:to:units:takenMs" (take.lua, transfer-end.lua). */
  transfers(laneShard: number): string {
    return `${this.shard(laneShard).tag}:transfers`;
  }

  /** The lanes' shard numbers (none when buckets are off). */
  laneShards(): number[] {
    return this.allShards().slice(this.shards);
  }

  /** A transfer's outcome in its recipient bucket's lane: "given" or "returned", set once (transfer-in.lua). */
  transferMarker(recipient: BucketRef, transferId: string): string {
    return `${this.shard(this.laneShard(recipient)).tag}:transfer-in:${transferId}`;
  }

  shardOf(voucherId: string): number {
    return SAFE_DIGITS.test(voucherId) ? Number(voucherId) % this.shards : Number(BigInt(voucherId) % BigInt(this.shards));
  }

  /** Every order stream: the shards 0 .. shards-1, then the bucket lanes (when on). */
  allShards(): number[] {
    return Array.from({ length: this.streams }, (_, shard) => shard);
  }

  shard(shard: number): ShardKeys {
    return this.shardKeys[shard] ?? shardKeysOf(shard);
  }

  voucher(voucherId: string): VoucherKeys {
    const shardKeys = this.shard(this.shardOf(voucherId));
    return { ...shardKeys, voucher: `${shardKeys.tag}:voucher:${voucherId}`, buyers: `${shardKeys.tag}:buyer-slots:${voucherId}` };
  }

  /** The order id an Idempotency-Key was accepted as, in the voucher's shard (or the user's home bucket's lane). */
  idempotentOrder(voucherId: string, userId: string, key: string, bucket?: BucketRef): string {
    return `${this.saleOf(voucherId, bucket).tag}:idem:${userId}:${key}`;
  }

  /** The voucher an Idempotency-Key is bound to: per user, any shard (written before reserve.lua). */
  idempotencyBinding(userId: string, key: string): string {
    return `seckill:idem:{${userId}}:${key}`;
  }

  /** The marker release.lua sets when an order's unit is given back. */
  releaseMarker(order: { orderId: string; voucherId: string }, bucket?: BucketRef): string {
    return `${this.saleOf(order.voucherId, bucket).tag}:released:${order.orderId}`;
  }
}

/*
 * The release queue (unpaid/unpaid-queue.ts), one per shard beside the shard's stream:
 *
 *   {seckill:N}:unpaid-due            sorted set "orderId:userId:voucherId:slot" -> due time (ms, Redis clock):
 *                                     orders written to MySQL, cancelled unpaid at the due time
 *
 * Per shard, not one global key: each shard's orders are written (and scheduled) by its own
 * worker loop, so the schedule lands in the hash slot that loop already uses, and under Redis Cluster
 * the queues spread over the masters like the streams; a master's failover stalls only its shards.
 */
export const unpaidDueKey = (shard: number): string => `${shardTag(shard)}:unpaid-due`;
