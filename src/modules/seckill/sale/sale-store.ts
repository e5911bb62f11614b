import type { RedisClient } from '../../../infra/redis.js';
import type { KeyReader } from '../../../lib/near-cache/index.js';
import { OutcomeUnknown } from '../errors.js';
import { IDEMPOTENCY_TTL_MS, SALE_STOCK_NEAR_REGION, queuedByUserMember, type SaleKeys } from '../keys.js';
import type { OrderRequest, QueuedOrder, ReserveResult, SaleState, UserQueuedOrder } from '../types.js';
import { AcknowledgedReserve, type ReplicaAckOptions } from './acknowledged-reserve.js';
import { ReserveBatcher } from './reserve-batcher.js';
import {
  defineSaleScripts,
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
}

/** A voucher's sale as the reconciliation reads it, atomically (one hash slot). */
export interface SaleSnapshot {
  stock: number | null;
  /** userId → bitmask of the slots its live orders hold. */
  holders: Map<string, number>;
  /** orderId → user and slot of this voucher's entries in the shard's queued hash. */
  queued: Map<string, { userId: string; slot: number }>;
}

/** A bound Idempotency-Key: `bound` to this voucher now or before, or to another voucher. */
export type KeyBinding = { bound: true } | { bound: false; voucherId: string };

interface LiveStock {
  stock: number | null;
  pttl: number;
}

/** A sale hash's stock and PTTL, through the near cache's tracked connection (module-level: no closure per read). */
async function fetchLiveStock(tracked: RedisClient, key: string): Promise<LiveStock> {
  const [raw, pttl] = await Promise.all([tracked.hget(key, 'stock'), tracked.pttl(key)]);
  return { stock: raw === null ? null : Number(raw), pttl };
}

/** Kept while the hash exists, and no longer than its Redis TTL. */
const KEEP_LIVE_STOCK = {
  cacheIf: ({ stock }: LiveStock): boolean => stock !== null,
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
  private readonly batcher: ReserveBatcher | undefined;
  private readonly onBatch: ((size: number) => void) | undefined;
  private readonly source: SaleSource | undefined;
  private readonly onUnitsBack: (voucherId: string) => void;

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
    const maxBatch = options.maxBatch ?? 1;
    this.batcher =
      maxBatch > 1
        ? new ReserveBatcher({ shardOf: (voucherId) => keys.shardOf(voucherId), decide: (batch) => this.decideBatch(batch), maxBatch, onBatch: this.onBatch })
        : undefined;
  }

  /** Publishes stock and window unless the voucher is already in Redis; true if published now. */
  async publish(state: SaleState): Promise<boolean> {
    return this.scripts.publish(state);
  }

  /** The voucher's stock in Redis; null if Redis does not know the voucher. */
  async stockOf(voucherId: string): Promise<number | null> {
    const stock = await this.redis.hget(this.keys.voucher(voucherId).voucher, 'stock');
    return stock === null ? null : Number(stock);
  }

  /**
   * The voucher's stock in Redis read through `reader` (the process's near cache): kept in memory
   * until Redis says the sale hash changed (an order, a release, a control, a repair), or its
   * PTTL runs out; null if Redis does not know the voucher (not kept: the first order or a
   * restart publishes it).
   */
  async liveStock(voucherId: string, reader: KeyReader): Promise<number | null> {
    const { stock } = await reader.read(SALE_STOCK_NEAR_REGION, this.keys.voucher(voucherId).voucher, fetchLiveStock, KEEP_LIVE_STOCK);
    return stock;
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
    const result = await this.reserveOnce(order, mode);
    if (result.outcome !== 'unknown-voucher' || !this.source) return result;
    const sale = await this.source(order.voucherId);
    if (!sale) return result;
    if (Date.now() >= sale.end.getTime()) return { outcome: 'ended' };
    await this.publish(sale);
    return this.reserveOnce(order, mode);
  }

  /**
   * reserve.lua without the publish-and-retry of `decide`: on `accepted` the order is on its way
   * to MySQL (and, with replica acknowledgement on, on as many replicas as asked, or counted as a
   * timeout). With batching on, the order goes in its shard's next batch (at once when none is
   * out); a failed call rejects every order of its batch.
   */
  async reserve(order: OrderRequest, mode: ReserveMode = 'stream'): Promise<ReserveResult> {
    const request: ReserveRequest = { order, mode };
    if (this.batcher) return this.batcher.reserve(request);
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

  private async reserveOnce(order: OrderRequest, mode: ReserveMode): Promise<ReserveResult> {
    try {
      return await this.reserve(order, mode);
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
    await this.redis.del(this.keys.idempotentOrder(order.voucherId, order.userId, order.idempotencyKey));
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
   * order nor by user. One MULTI per shard (its keys share a hash slot) for all of them.
   */
  async forgetQueued(orders: readonly QueuedOrder[]): Promise<void> {
    const byShard = new Map<number, QueuedOrder[]>();
    for (const order of orders) {
      const shard = this.keys.shardOf(order.voucherId);
      byShard.set(shard, [...(byShard.get(shard) ?? []), order]);
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
    const { inFlight, queued, queuedByUser } = this.keys.voucher(order.voucherId);
    const replies = await this.redis.multi().zrem(inFlight, order.orderId).hdel(queued, order.orderId).zrem(queuedByUser, queuedByUserMember(order)).exec();
    const failure = replies?.find(([error]) => error);
    if (failure) throw failure[0]!;
  }

  /** Streams a held order for the worker to write (hand-off.lua); false if it was not held any more. */
  async handOff(order: QueuedOrder): Promise<boolean> {
    return (await this.scripts.handOff({ shard: this.keys.shardOf(order.voucherId), orderId: order.orderId })) === 1;
  }

  /** Streams the shard's orders held longer than `ageMs` (their request died); returns how many. */
  async handOffStale(shard: number, ageMs: number, limit: number): Promise<number> {
    return this.scripts.handOff({ shard, ageMs, limit });
  }

  /** Gives an order's unit and slot back, exactly once per order (release.lua). */
  async release(order: QueuedOrder): Promise<boolean> {
    const released = await this.scripts.release(order);
    if (released) this.onUnitsBack(order.voucherId);
    // A held order given back is no longer in flight (hand-off.lua would drop it anyway: not queued).
    await this.redis.zrem(this.keys.voucher(order.voucherId).inFlight, order.orderId);
    return released;
  }

  /**
   * An administrator's change (control.lua): absolute total (stock), window and suspension; a
   * field left undefined is unchanged. `totalIfMissing` is MySQL's total before the change.
   */
  async control(voucherId: string, totalIfMissing: number, change: SaleControl): Promise<ControlOutcome> {
    const outcome = await this.scripts.control({ voucherId, totalIfMissing, change });
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
    const replies = await this.redis.multi().hget(keys.voucher, 'stock').hgetall(keys.buyers).hgetall(keys.queued).exec();
    if (!replies) throw new Error('the Redis read of the sale was aborted');
    const failure = replies.find(([error]) => error);
    if (failure) throw failure[0]!;
    const [[, stock], [, masks], [, queuedAll]] = replies as [[null, string | null], [null, Record<string, string>], [null, Record<string, string>]];
    const queued = new Map<string, { userId: string; slot: number }>();
    for (const [orderId, value] of Object.entries(queuedAll)) {
      const [userId = '', ofVoucher = '', slot = '1'] = value.split(':');
      if (ofVoucher === voucherId) queued.set(orderId, { userId, slot: Number(slot) });
    }
    const holders = new Map(Object.entries(masks).map(([userId, mask]) => [userId, Number(mask)] as const));
    return { stock: stock === null ? null : Number(stock), holders, queued };
  }

  /** Whether the user holds one of the voucher's units in Redis (an order accepted and not cancelled). */
  async isBuyer(voucherId: string, userId: string): Promise<boolean> {
    return (await this.redis.hexists(this.keys.voucher(voucherId).buyers, userId)) === 1;
  }

  /** Which of the voucher's orders have had their unit given back (their release marker exists). */
  async releasedOrders(voucherId: string, orderIds: string[]): Promise<Set<string>> {
    const results = await Promise.all(orderIds.map((orderId) => this.redis.exists(this.keys.releaseMarker({ orderId, voucherId }))));
    return new Set(orderIds.filter((_, index) => results[index] === 1));
  }

  /** Closes the replica acknowledgement's connections (the shared client is closed by its owner). */
  async close(): Promise<void> {
    await this.acknowledged?.close();
  }
}
