import type { RedisClient } from '../../../infra/redis.js';
import type { KeyReader } from '../../../lib/near-cache/index.js';
import { SmartBatcher } from '../../../lib/smart-batch/index.js';
import { OutcomeUnknown, TemporarilyUnavailable } from '../errors/index.js';
import { IDEMPOTENCY_TTL_MS, SALE_STOCK_NEAR_REGION, homeBucket, queuedByUserMember, type BucketRef, type SaleKeys } from '../keys.js';
import { SECKILL_MESSAGES } from '../messages.js';
import type { OrderRequest, QueuedOrder, ReserveResult, SaleState, UserQueuedOrder } from '../types.js';
import { AcknowledgedReserve, type ReplicaAckOptions } from './acknowledged-reserve.js';
import { BucketControls } from './bucket-controls.js';
import { BucketTransfers, bucketsOf, parseTransfer, readBuckets, shareOf, TRANSFER_SWEEP_AFTER_MS, type PendingTransfer, unwaitedSteps } from './transfers.js';
import {
  defineSaleScripts,
  type BucketRepair,
  type ControlOutcome,
  type ReserveMode,
  type ReserveRequest,
  type SaleControl,
  type SaleRecord,
  type SaleScripts,
  type SaleWindow,
} from './sale-scripts.js';

/** A voucher's sale as MySQL records it, for a voucher Redis does not know (null: no such sale). */
export type SaleSource = (voucherId: string) => Promise<SaleState | null>;

export interface SaleStoreOptions {
  /** Replica acknowledgement of accepted orders (SECKILL_REPLICA_ACKS); off by default. */
  replicaAcks?: ReplicaAckOptions;
  /** Where `decide` finds a sale Redis does not know; without it such an order is `unknown-voucher`. */
  source?: SaleSource;
  /**
   * Called after this store gave units back or changed a sale (release, control, repair): this
   * instance's sold-out memory forgets the voucher before the caller answers.
   */
  onUnitsBack?: (voucherId: string) => void;
  /**
   * Most orders one reserve.lua call decides (SECKILL_RESERVE_BATCH_MAX): each shard has one call
   * out at a time, and the orders arriving meanwhile go together in the next. 1 (the default for
   * a store built without it): each order sent alone and at once, with no wait for another.
   */
  maxBatch?: number;
  /** Each batch's size as it goes out (seckill_reserve_batch_size); batches of 1 included. */
  onBatch?: (size: number) => void;
  /**
   * The request deadline (REQUEST_DEADLINE_MS) of the orders this store decides: an order of a
   * bucketed sale stops refilling its empty home bucket at three quarters of it (at most
   * REFILL_PATIENCE_MS), so that the store's 503 "retry" answers, not the deadline's "outcome
   * unknown" while the order is still being decided.
   */
  requestDeadlineMs?: number;
}

/** A voucher's sale as the reconciliation reads it, atomically (one hash slot). */
export interface SaleSnapshot {
  stock: number | null;
  /** userId → bitmask of the slots its live orders hold. */
  holders: Map<string, number>;
  /** orderId → user and slot of this voucher's entries in the shard's queued hash. */
  queued: Map<string, { userId: string; slot: number }>;
}

/** One bucket of a bucketed sale as the reconciliation reads it, atomically (one MULTI on its lane). */
export interface BucketSnapshot {
  /** The bucket's hash exists. */
  exists: boolean;
  stock: number;
  /** Units its refills took and have not settled. */
  pending: number;
  /** userId → slot bitmask, of the users homing to it. */
  holders: Map<string, number>;
  /** orderId → user and slot of the voucher's entries in the lane's queued hash. */
  queued: Map<string, { userId: string; slot: number }>;
  /** The voucher's transfers taken from this bucket, not yet settled. */
  transfers: PendingTransfer[];
  /** Which of the orders asked about have their release marker in this bucket's lane. */
  released: Set<string>;
}

/**
 * How long an order of a bucketed sale keeps refilling its empty home bucket before it is answered
 * "retry" (503): units are moving, or a dead refill's units wait for the sweep. Bounded in time,
 * not in rounds: under a burst one refill serves many waiting orders, and the first of them take
 * its units, so an order may need several rounds while the sale still has units.
 */
const REFILL_PATIENCE_MS = 2_000;

/** A bound Idempotency-Key: `bound` to this voucher now or before, or to another voucher. */
export type KeyBinding = { bound: true } | { bound: false; voucherId: string };

/** A sale hash as the voucher lists read it: a sale's (or a bucket's) stock and pending units, or a layout record's B. */
interface LiveStock {
  stock: number | null;
  pending: number;
  buckets: number;
  pttl: number;
}

/** A sale hash's stock, pending, buckets and PTTL, through the near cache's tracked connection (module-level: no closure per read). */
async function fetchLiveStock(tracked: RedisClient, key: string): Promise<LiveStock> {
  const [[stock, pending, buckets], pttl] = await Promise.all([tracked.hmget(key, 'stock', 'pending', 'buckets'), tracked.pttl(key)]);
  return { stock: stock === null ? null : Number(stock), pending: Number(pending ?? 0), buckets: Number(buckets ?? 1), pttl };
}

/** Kept while the hash holds a sale or a layout, and no longer than its Redis TTL. */
const KEEP_LIVE_STOCK = {
  cacheIf: ({ stock, buckets }: LiveStock): boolean => stock !== null || buckets > 1,
  ttlMs: ({ pttl }: LiveStock): number | undefined => (pttl === -1 ? undefined : pttl),
};

/**
 * The Redis side of each sale: stock and window, buyers, and the atomic decisions on them
 * (sale-scripts.ts, lua/). Redis decides; MySQL records.
 */
export class SaleStore {
  private readonly scripts: SaleScripts;
  /** Set when replica acknowledgement is on: batches with orders for the stream then go through its group commit. */
  private readonly acknowledged: AcknowledgedReserve | undefined;
  /** Set when batches of more than one order are allowed. */
  private readonly batcher: SmartBatcher<ReserveRequest, ReserveResult> | undefined;
  private readonly onBatch: ((size: number) => void) | undefined;
  private readonly refillPatienceMs: number;
  private readonly source: SaleSource | undefined;
  private readonly onUnitsBack: (voucherId: string) => void;
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
  /** Refills and their sweep (transfers.ts). */
  readonly transfers: BucketTransfers;
  /** An administrator's changes of a bucketed sale (bucket-controls.ts). */
  private readonly bucketControls: BucketControls;

  constructor(
    private readonly redis: RedisClient,
    readonly keys: SaleKeys,
    options: SaleStoreOptions = {},
  ) {
    this.scripts = defineSaleScripts(redis, keys);
    const acks = options.replicaAcks;
    this.acknowledged = acks && acks.acks > 0 ? new AcknowledgedReserve(redis, keys, acks) : undefined;
    this.source = options.source;
    this.onUnitsBack = options.onUnitsBack ?? (() => undefined);
    this.onBatch = options.onBatch;
    this.refillPatienceMs = Math.min(REFILL_PATIENCE_MS, Math.floor(((options.requestDeadlineMs ?? Infinity) * 3) / 4));
    const maxBatch = options.maxBatch ?? 1;
    this.batcher =
      maxBatch > 1
        ? new SmartBatcher<ReserveRequest, ReserveResult>({
            laneOf: ({ order, bucket }) => (bucket ? keys.laneShard(bucket) : keys.shardOf(order.voucherId)),
            decide: (batch) => this.decideBatch(batch),
            maxBatch,
            onBatch: this.onBatch,
          })
        : undefined;
    // With replica acknowledgement on, each refill step waits for the replicas as a batch does.
    this.transfers = new BucketTransfers(redis, keys, this.acknowledged?.transferSteps() ?? unwaitedSteps(this.scripts));
    this.bucketControls = new BucketControls(redis, keys, this.scripts);
  }

  /**
   * Publishes stock and window unless the voucher is already in Redis; true if published now. A
   * voucher of B > 1 buckets: each bucket with its share of the stock (⌊S/B⌋, the remainder to the
   * first ones) and its part of the total (that stock plus its share of the units sold before the
   * publish: the parts add up to the total, bucket-controls.ts), then the layout record in its
   * shard's hash.
   */
  async publish(state: SaleState): Promise<boolean> {
    const buckets = state.buckets ?? 1;
    if (buckets <= 1) return this.scripts.publish(state);
    const { total } = state;
    const published = await Promise.all(
      bucketsOf(buckets).map((bucket) => {
        const stock = shareOf(state.stock, bucket);
        return this.scripts.publishBucket({
          sale: state,
          bucket,
          stock,
          total: total === undefined || total === null ? undefined : stock + shareOf(Math.max(0, total - state.stock), bucket),
        });
      }),
    );
    if (!(await this.scripts.publishLayout({ sale: state, buckets }))) {
      throw new Error(`voucher ${state.voucherId} is published with one bucket in Redis: unpublish it before publishing ${buckets}`);
    }
    this.layouts.set(state.voucherId, buckets);
    return published.some(Boolean);
  }

  /**
   * Removes a sale's keys of the layout `buckets` from Redis (its hash and buyers, each bucket's,
   * the layout record): for a change of B before the sale begins (sale-controls.ts), followed by
   * `publish` of the new layout. Orders routed meanwhile find no sale and read the layout again.
   */
  async unpublish(voucherId: string, buckets: number): Promise<void> {
    if (buckets > 1) {
      await Promise.all(
        bucketsOf(buckets).map((bucket) => this.redis.del(this.keys.bucket(voucherId, bucket).voucher, this.keys.bucket(voucherId, bucket).buyers)),
      );
    }
    const { voucher, buyers } = this.keys.voucher(voucherId);
    await this.redis.del(voucher, buyers);
    this.layouts.delete(voucherId);
  }

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
  private async fixedBucketsOf(voucherId: string): Promise<number> {
    // A deployment without bucket lanes sells every voucher from one bucket: nothing to read per order.
    if (!this.keys.bucketLanes) return 1;
    return this.fixedLayouts.get(voucherId) ?? this.bucketsOf(voucherId);
  }

  /** The order stream (shard, or bucket lane) an order of the voucher was accepted into. */
  async streamShardOf(order: QueuedOrder): Promise<number> {
    const home = this.homeOf(order.voucherId, order.userId, await this.fixedBucketsOf(order.voucherId));
    return home ? this.keys.laneShard(home) : this.keys.shardOf(order.voucherId);
  }

  /** The B this instance routes the voucher's orders by (1 unless it has seen a layout). */
  routedBuckets(voucherId: string): number {
    return this.layouts.get(voucherId) ?? 1;
  }

  /** The bucket that sells the user's orders of the voucher, by the routed B; undefined for B = 1. */
  private homeOf(voucherId: string, userId: string, buckets = this.routedBuckets(voucherId)): BucketRef | undefined {
    return buckets > 1 ? { index: homeBucket(userId, buckets), of: buckets } : undefined;
  }

  /** The voucher's stock in Redis (a bucketed one's: the sum over its buckets, pending transfers included); null if Redis does not know the voucher. */
  async stockOf(voucherId: string): Promise<number | null> {
    const [stock, buckets] = await this.redis.hmget(this.keys.voucher(voucherId).voucher, 'stock', 'buckets');
    if (buckets !== null && Number(buckets) > 1) {
      const readings = await readBuckets(this.redis, this.keys, voucherId, Number(buckets));
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
    const sale = await reader.read(SALE_STOCK_NEAR_REGION, this.keys.voucher(voucherId).voucher, fetchLiveStock, KEEP_LIVE_STOCK);
    if (sale.buckets <= 1 || !this.keys.bucketLanes) return sale.stock;
    // A bucketed sale: its layout record (kept: only a window change writes it), then each bucket's
    // stock and pending units (unsold: on their way between buckets), each its own near cache entry.
    const readings = await Promise.all(
      bucketsOf(sale.buckets).map((bucket) =>
        reader.read(SALE_STOCK_NEAR_REGION, this.keys.bucket(voucherId, bucket).voucher, fetchLiveStock, KEEP_LIVE_STOCK),
      ),
    );
    const held = readings.filter((reading) => reading.stock !== null);
    return held.length === 0 ? null : held.reduce((sum, reading) => sum + reading.stock! + reading.pending, 0);
  }

  async read(voucherId: string): Promise<SaleState | null> {
    const fields = await this.redis.hgetall(this.keys.voucher(voucherId).voucher);
    if (fields.stock === undefined) return null;
    return { voucherId, stock: Number(fields.stock), begin: new Date(Number(fields.begin)), end: new Date(Number(fields.end)) };
  }

  /**
   * An order decided (reserve.lua): `stream` queues an accepted order for the worker, `hold`
   * keeps it in flight for the sync strategy, which writes MySQL and then calls `settle`
   * (written), `release` (refused by MySQL) or `handOff` (failed, or unknown). A voucher Redis
   * does not know (created while Redis was away, lost by Redis, or long over) is published from
   * the source, unless its sale is over, and decided once more. A failed script call throws
   * OutcomeUnknown: the order may have been accepted, so it is never answered as refused.
   */
  async decide(order: OrderRequest, mode: ReserveMode = 'stream'): Promise<ReserveResult> {
    const result = await this.reserveRouted(order, mode);
    if (result.outcome !== 'unknown-voucher') return result;
    // A bucketed voucher routed by an older (or no) layout: route by the one Redis records.
    const routed = this.routedBuckets(order.voucherId);
    if ((await this.bucketsOf(order.voucherId)) !== routed) return this.decide(order, mode);
    if (!this.source) return result;
    const sale = await this.source(order.voucherId);
    if (!sale) return result;
    if (Date.now() >= sale.end.getTime()) return { outcome: 'ended' };
    await this.publish(sale);
    await this.bucketsOf(order.voucherId);
    return this.reserveRouted(order, mode);
  }

  /**
   * B = 1: one reserve. B > 1: reserve in the user's home bucket; when it is empty ("sold out"
   * there), refill it from the others and reserve again. Sold out only when the refill decided
   * every bucket empty with nothing pending (transfers.ts `soldOutBetween`); after
   * its patience (REFILL_PATIENCE_MS, less under a short request deadline) of refills without a decision (units moving, or a dead refill's units
   * waiting for the sweep), a 503 to retry: never a false "sold out".
   */
  private async reserveRouted(order: OrderRequest, mode: ReserveMode): Promise<ReserveResult> {
    const home = this.homeOf(order.voucherId, order.userId);
    if (!home) return this.reserveOnce(order, mode);
    const giveUpAt = Date.now() + this.refillPatienceMs;
    for (;;) {
      const result = await this.reserveOnce(order, mode, home);
      if (result.outcome !== 'sold-out') return result;
      if (Date.now() >= giveUpAt) throw new TemporarilyUnavailable(SECKILL_MESSAGES.bucketsRefilling(), 1_000);
      if ((await this.transfers.refill(order.voucherId, home)) === 'sold-out') return result;
    }
  }

  /**
   * reserve.lua without the publish-and-retry of `decide`: on `accepted` the order is on its way
   * to MySQL (and, with replica acknowledgement on, on as many replicas as asked, or counted as a
   * timeout). With batching on, the order goes in its shard's next batch (at once when none is
   * out); a failed call rejects every order of its batch.
   */
  async reserve(order: OrderRequest, mode: ReserveMode = 'stream', bucket?: BucketRef): Promise<ReserveResult> {
    const request: ReserveRequest = bucket ? { order, mode, bucket } : { order, mode };
    if (this.batcher) return this.batcher.submit(request);
    this.onBatch?.(1);
    const [result] = await this.decideBatch([request]);
    if (!result) throw new Error('reserve.lua answered no result for the order');
    return result;
  }

  /** One reserve.lua call for a batch of one shard; with replica acknowledgement, one WAIT after it when an order may go to the stream. */
  private decideBatch(batch: ReserveRequest[]): Promise<ReserveResult[]> {
    if (this.acknowledged && batch.some(({ mode }) => mode === 'stream')) return this.acknowledged.decide(batch);
    return this.scripts.reserve(batch);
  }

  private async reserveOnce(order: OrderRequest, mode: ReserveMode, bucket?: BucketRef): Promise<ReserveResult> {
    try {
      return await this.reserve(order, mode, bucket);
    } catch (error) {
      throw new OutcomeUnknown(order.orderId, order.voucherId, error);
    }
  }

  /**
   * Binds an Idempotency-Key of the user to a voucher for IDEMPOTENCY_TTL_MS, before reserve.lua
   * runs: the key's order id lives in the voucher's shard, and another voucher may be on another
   * shard (Redis Cluster), so one key used for two vouchers is caught here, per user.
   */
  async bindIdempotencyKey(userId: string, key: string, voucherId: string): Promise<KeyBinding> {
    const binding = this.keys.idempotencyBinding(userId, key);
    const earlier = (await this.redis.call('SET', binding, voucherId, 'PX', IDEMPOTENCY_TTL_MS, 'NX', 'GET')) as string | null;
    return earlier === null || earlier === voucherId ? { bound: true } : { bound: false, voucherId: earlier };
  }

  /** The key's order was given back before its request answered (MySQL refused it): a retry decides afresh. */
  async forgetIdempotencyKey(order: OrderRequest): Promise<void> {
    if (order.idempotencyKey === undefined) return;
    await this.redis.del(this.keys.idempotentOrder(order.voucherId, order.userId, order.idempotencyKey, this.homeOf(order.voucherId, order.userId)));
  }

  /**
   * The user's orders accepted in Redis and not yet in MySQL, newest first (ids rise with the
   * time of acceptance): one script per shard on the user's own list (queued-of-user.lua), never
   * a scan of the shards' queued hashes.
   */
  async queuedOfUser(userId: string): Promise<UserQueuedOrder[]> {
    const perShard = await Promise.all(this.keys.allShards().map((shard) => this.scripts.queuedOfUser({ shard, userId })));
    return perShard.flat().sort((a, b) => (BigInt(a.orderId) < BigInt(b.orderId) ? 1 : -1));
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
        const { queued, queuedByUser } = this.keys.shard(shard);
        const replies = await this.redis
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
    const { inFlight, queued, queuedByUser } = this.keys.saleOf(order.voucherId, this.homeOf(order.voucherId, order.userId));
    const replies = await this.redis.multi().zrem(inFlight, order.orderId).hdel(queued, order.orderId).zrem(queuedByUser, queuedByUserMember(order)).exec();
    const failure = replies?.find(([error]) => error);
    if (failure) throw failure[0]!;
  }

  /** Streams a held order for the worker to write (hand-off.lua); false if it was not held any more. */
  async handOff(order: QueuedOrder): Promise<boolean> {
    const home = this.homeOf(order.voucherId, order.userId);
    const shard = home ? this.keys.laneShard(home) : this.keys.shardOf(order.voucherId);
    return (await this.scripts.handOff({ shard, orderId: order.orderId })) === 1;
  }

  /** Streams the shard's orders held longer than `ageMs` (their request died); returns how many. */
  async handOffStale(shard: number, ageMs: number, limit: number): Promise<number> {
    return this.scripts.handOff({ shard, ageMs, limit });
  }

  /**
   * Gives an order's unit and slot back, exactly once per order (release.lua), to the bucket that
   * sold it: the user's home bucket, by the B Redis records (its instance may never have routed
   * an order of the voucher).
   */
  async release(order: QueuedOrder): Promise<boolean> {
    const bucket = this.homeOf(order.voucherId, order.userId, await this.fixedBucketsOf(order.voucherId));
    const released = await this.scripts.release(bucket ? { order, bucket } : { order });
    if (released) this.onUnitsBack(order.voucherId);
    // A held order given back is no longer in flight (hand-off.lua would drop it anyway: not queued).
    await this.redis.zrem(this.keys.saleOf(order.voucherId, bucket).inFlight, order.orderId);
    return released;
  }

  /** Ends the transfers whose refill died between its steps (transfers.ts); returns how many. */
  async sweepTransfers(olderThanMs = TRANSFER_SWEEP_AFTER_MS): Promise<number> {
    return this.transfers.sweep(olderThanMs);
  }

  /**
   * An administrator's change (control.lua): absolute total (stock), window and suspension; a
   * field left undefined is unchanged. `totalIfMissing` is MySQL's total before the change. A
   * bucketed sale (by its layout in Redis, else MySQL's `buckets`) is changed in every bucket
   * (bucket-controls.ts), the answer summed over them.
   */
  async control(voucherId: string, totalIfMissing: number, change: SaleControl, recordedBuckets = 1): Promise<ControlOutcome> {
    const inRedis = this.keys.bucketLanes ? await this.bucketsOf(voucherId) : 1;
    // Redis's layout names where the keys are; without one (lost with its shard), MySQL's B still finds the buckets.
    const buckets = inRedis > 1 || !this.keys.bucketLanes ? inRedis : recordedBuckets;
    const outcome =
      buckets > 1
        ? await this.bucketControls.apply(voucherId, buckets, totalIfMissing, change)
        : await this.scripts.control({ voucherId, totalIfMissing, change });
    if (outcome.outcome === 'applied') this.onUnitsBack(voucherId);
    return outcome;
  }

  /** Freezes the sale for a repair (reserve.lua answers "frozen") until `freezeMs` pass or the token's owner thaws it. */
  async freeze(sale: SaleWindow, token: string, freezeMs: number): Promise<void> {
    await this.scripts.freeze({ sale, token, freezeMs });
  }

  /** Lifts the freeze if it is still the token's; true if thawed. */
  async thaw(voucherId: string, token: string): Promise<boolean> {
    return this.scripts.thaw({ voucherId, token });
  }

  /**
   * Rewrites a frozen sale's stock and buyer slots from MySQL's record and thaws it, in one step
   * (repair.lua). Returns the stock written, or -1 when the freeze had lapsed (nothing written).
   */
  async repair(sale: SaleWindow, token: string, record: SaleRecord): Promise<number> {
    const written = await this.scripts.repair({ sale, token, record });
    if (written >= 0) this.onUnitsBack(sale.voucherId);
    return written;
  }

  /** The voucher's stock, its buyers' slots and the shard's queued orders of it, read atomically (one hash slot). */
  async snapshot(voucherId: string): Promise<SaleSnapshot> {
    const keys = this.keys.voucher(voucherId);
    const replies = await execAll(this.redis.multi().hget(keys.voucher, 'stock').hgetall(keys.buyers).hgetall(keys.queued));
    const [stock, masks, queuedAll] = replies as [string | null, Record<string, string>, Record<string, string>];
    return { stock: stock === null ? null : Number(stock), holders: masksOf(masks), queued: queuedOf(voucherId, queuedAll) };
  }

  /**
   * One bucket of a bucketed sale read atomically (its lane's hash slot): stock, pending, its
   * users' slots, the lane's queued orders and transfers of the voucher from it, and the release
   * markers of `releaseIds` (orders of users homing to it).
   */
  async bucketSnapshot(voucherId: string, bucket: BucketRef, releaseIds: readonly string[] = []): Promise<BucketSnapshot> {
    const keys = this.keys.bucket(voucherId, bucket);
    const multi = this.redis
      .multi()
      .hmget(keys.voucher, 'stock', 'pending')
      .hgetall(keys.buyers)
      .hgetall(keys.queued)
      .hgetall(this.keys.transfers(this.keys.laneShard(bucket)));
    for (const orderId of releaseIds) multi.exists(this.keys.releaseMarker({ orderId, voucherId }, bucket));
    const [[stock, pending], masks, queuedAll, records, ...markers] = (await execAll(multi)) as [
      [string | null, string | null],
      Record<string, string>,
      Record<string, string>,
      Record<string, string>,
      ...number[],
    ];
    const transfers = Object.entries(records)
      .map(([transferId, record]) => parseTransfer(transferId, record))
      .filter((transfer) => transfer.voucherId === voucherId && transfer.of === bucket.of && transfer.from === bucket.index);
    return {
      exists: stock !== null,
      stock: Number(stock ?? 0),
      pending: Number(pending ?? 0),
      holders: masksOf(masks),
      queued: queuedOf(voucherId, queuedAll),
      transfers,
      released: new Set(releaseIds.filter((_, index) => markers[index] === 1)),
    };
  }

  /** Freezes every bucket of a bucketed sale for a repair (freeze.lua on each: a missing one is created frozen). */
  async freezeBuckets(sale: SaleWindow, buckets: number, token: string, freezeMs: number): Promise<void> {
    await Promise.all(bucketsOf(buckets).map((bucket) => this.scripts.freezeBucket({ sale, bucket, token, freezeMs })));
  }

  /** Lifts a repair's freeze from every bucket still frozen by `token`. */
  async thawBuckets(voucherId: string, buckets: number, token: string): Promise<void> {
    await Promise.all(bucketsOf(buckets).map((bucket) => this.scripts.thawBucket({ voucherId, bucket, token })));
  }

  /** One bucket of a frozen sale rewritten (repair-bucket.lua): its stock, or -1 when the freeze had lapsed (nothing written). */
  async repairBucket(repair: BucketRepair): Promise<number> {
    const written = await this.scripts.repairBucket(repair);
    if (written >= 0) this.onUnitsBack(repair.sale.voucherId);
    return written;
  }

  /** Writes a bucketed sale's layout record (publish-layout.lua); false when its shard's hash holds a one-bucket sale. */
  async publishLayout(sale: SaleState, buckets: number): Promise<boolean> {
    return this.scripts.publishLayout({ sale, buckets });
  }

  /** Whether the user holds one of the voucher's units in Redis (an order accepted and not cancelled). */
  async isBuyer(voucherId: string, userId: string): Promise<boolean> {
    const buyers = this.keys.saleOf(voucherId, this.homeOf(voucherId, userId, await this.fixedBucketsOf(voucherId))).buyers;
    return (await this.redis.hexists(buyers, userId)) === 1;
  }

  /** Which of the voucher's orders have had their unit given back (their release marker exists; in `bucket`'s lane for a bucketed sale). */
  async releasedOrders(voucherId: string, orderIds: string[], bucket?: BucketRef): Promise<Set<string>> {
    const results = await Promise.all(orderIds.map((orderId) => this.redis.exists(this.keys.releaseMarker({ orderId, voucherId }, bucket))));
    return new Set(orderIds.filter((_, index) => results[index] === 1));
  }

  /** Closes the replica acknowledgement's connections (the shared client is closed by its owner). */
  async close(): Promise<void> {
    this.transfers.stopSweeping();
    await this.acknowledged?.close();
  }
}

/** A MULTI's replies, or its first error thrown. */
async function execAll(multi: ReturnType<RedisClient['multi']>): Promise<unknown[]> {
  const replies = await multi.exec();
  if (!replies) throw new Error('the Redis read of the sale was aborted');
  const failure = replies.find(([error]) => error);
  if (failure) throw failure[0]!;
  return replies.map(([, reply]) => reply);
}

/** A buyer-slots hash read: userId → slot bitmask. */
const masksOf = (masks: Record<string, string>): Map<string, number> => new Map(Object.entries(masks).map(([userId, mask]) => [userId, Number(mask)] as const));

/** The voucher's entries of a queued hash ("userId:voucherId:slot:acceptedMs"): orderId → user and slot. */
function queuedOf(voucherId: string, queuedAll: Record<string, string>): Map<string, { userId: string; slot: number }> {
  const queued = new Map<string, { userId: string; slot: number }>();
  for (const [orderId, value] of Object.entries(queuedAll)) {
    const [userId = '', ofVoucher = '', slot = '1'] = value.split(':');
    if (ofVoucher === voucherId) queued.set(orderId, { userId, slot: Number(slot) });
  }
  return queued;
}
