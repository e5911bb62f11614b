import type { RedisClient } from '../../infra/redis.js';
import type { KeyReader } from '../../lib/near-cache/index.js';
import type { Scripts } from '../../lib/redis-scripts/index.js';
import { IDEMPOTENCY_TTL_MS, RELEASE_MARKER_TTL_SECONDS, SALE_KEYS_KEPT_AFTER_END_MS, SALE_STOCK_NEAR_REGION, type SaleKeys } from './keys.js';
import { AcknowledgedReserve, type ReplicaAckOptions } from './replica-acks.js';
import { defineSaleScripts, reserveArgs, toReserveResult, type SaleScripts } from './scripts.js';
import type { OrderRequest, QueuedOrder, ReserveResult, SaleState } from './types.js';

/** An administrator's change to a sale; undefined fields are left as they are. */
export interface SaleControl {
  total?: number;
  begin?: Date;
  end?: Date;
  suspended?: boolean;
  limitPerUser?: number;
}

export type ControlOutcome =
  { outcome: 'applied'; stock: number; total: number } | { outcome: 'not-published' } | { outcome: 'below-sold'; sold: number; total: number };

/** A voucher's sale as the reconciliation reads it, atomically (one slot). */
export interface SaleSnapshot {
  stock: number | null;
  /** userId → bitmask of the slots its live orders hold. */
  holders: Map<string, number>;
  /** orderId → user and slot of this voucher's entries in the shard's queued hash. */
  queued: Map<string, { userId: string; slot: number }>;
}

/** An order accepted in Redis and not yet written to MySQL, as its user's list shows it. */
export interface UserQueuedOrder {
  orderId: string;
  voucherId: string;
  reservedAt: Date;
  slot: number;
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
 * (lua/: publish, reserve, release, pause, unpause, repair). Redis decides; MySQL records.
 */
export class SaleStore {
  private readonly scripts: Scripts<SaleScripts>;
  /** Set when replica acknowledgement is on: reserves then go through its group commit. */
  private readonly acknowledged: AcknowledgedReserve | undefined;

  constructor(
    private readonly redis: RedisClient,
    readonly keys: SaleKeys,
    replicaAck: ReplicaAckOptions = { acks: 0, timeoutMs: 0 },
  ) {
    this.scripts = defineSaleScripts(redis);
    this.acknowledged = replicaAck.acks > 0 ? new AcknowledgedReserve(redis, keys, replicaAck) : undefined;
  }

  /** Publishes stock and window unless the voucher is already in Redis; true if published now. */
  async publish(state: SaleState): Promise<boolean> {
    const key = this.keys.voucher(state.voucherId).voucher;
    const published = await this.scripts.publish(
      key,
      state.stock,
      state.begin.getTime(),
      state.end.getTime(),
      SALE_KEYS_KEPT_AFTER_END_MS,
      state.total ?? '',
      state.suspended === true ? '1' : '',
      state.limitPerUser ?? '',
    );
    return published === 1;
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
   * The atomic order check (reserve.lua): on `accepted` the order is on its way to MySQL (and,
   * with replica acknowledgement on, on as many replicas as asked, or counted as a timeout).
   */
  async reserve(order: OrderRequest): Promise<ReserveResult> {
    if (this.acknowledged) return this.acknowledged.reserve(order);
    return toReserveResult(await this.scripts.reserve(...reserveArgs(this.keys, order)));
  }

  /**
   * The sync strategy's reserve: the same decision on the same stock and buyers as `reserve`,
   * but the accepted order is held in the in-flight set, not streamed: the caller writes MySQL,
   * then calls `settle` (written), `release` (refused by MySQL) or `handOff` (failed, or unknown).
   */
  async hold(order: OrderRequest): Promise<ReserveResult> {
    return toReserveResult(await this.scripts.reserve(...reserveArgs(this.keys, order, 'hold')));
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
   * The user's orders accepted in Redis and not yet in MySQL: one script per shard on the user's
   * own list (queued-of-user.lua), never a scan of the shards' queued hashes.
   */
  async queuedOfUser(userId: string): Promise<UserQueuedOrder[]> {
    const perShard = await Promise.all(
      this.keys.allShards().map((shard) => this.scripts.queuedOfUser(this.keys.userOrders(shard, userId), this.keys.shard(shard).queued)),
    );
    const orders: UserQueuedOrder[] = [];
    for (const flat of perShard) {
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const [voucherId = '', reservedMs = '0', slot = '1'] = flat[i + 1]!.split(':');
        orders.push({ orderId: flat[i]!, voucherId, reservedAt: new Date(Number(reservedMs)), slot: Number(slot) });
      }
    }
    // Newest first, like MySQL's list (ids sort by time).
    return orders.sort((a, b) => (BigInt(a.orderId) < BigInt(b.orderId) ? 1 : -1));
  }

  /** A held order is in MySQL: no longer in flight nor queued. */
  async settle(order: QueuedOrder): Promise<void> {
    const { inFlight, queued } = this.keys.voucher(order.voucherId);
    const userOrders = this.keys.userOrders(this.keys.shardOf(order.voucherId), order.userId);
    const replies = await this.redis.multi().zrem(inFlight, order.orderId).hdel(queued, order.orderId).hdel(userOrders, order.orderId).exec();
    const failure = replies?.find(([error]) => error);
    if (failure) throw failure[0]!;
  }

  /** Streams a held order for the worker to write (hand-off.lua); false if it was not held any more. */
  async handOff(order: QueuedOrder): Promise<boolean> {
    const { inFlight, queued, stream } = this.keys.voucher(order.voucherId);
    return (await this.scripts.handOff(inFlight, queued, stream, 'one', order.orderId)) === 1;
  }

  /** Streams the shard's orders held longer than `ageMs` (their request died); returns how many. */
  async handOffStale(shard: number, ageMs: number, limit: number): Promise<number> {
    const { inFlight, queued, stream } = this.keys.shard(shard);
    return this.scripts.handOff(inFlight, queued, stream, 'older', ageMs, limit);
  }

  /** Gives an order's unit and slot back, exactly once per order (release.lua). */
  async release(order: QueuedOrder): Promise<boolean> {
    const { voucher, buyers, queued, inFlight } = this.keys.voucher(order.voucherId);
    const marker = this.keys.releaseMarker(order);
    const userOrders = this.keys.userOrders(this.keys.shardOf(order.voucherId), order.userId);
    const released =
      (await this.scripts.release(voucher, buyers, marker, queued, userOrders, order.userId, order.orderId, RELEASE_MARKER_TTL_SECONDS, order.slot)) === 1;
    // A held order given back is no longer in flight (hand-off.lua would drop it anyway: not queued).
    await this.redis.zrem(inFlight, order.orderId);
    return released;
  }

  /**
   * An administrator's change (control.lua): absolute total (stock), window and suspension; a
   * field left undefined is unchanged. `totalIfMissing` is MySQL's total before the change.
   */
  async control(voucherId: string, totalIfMissing: number, change: SaleControl): Promise<ControlOutcome> {
    const { voucher, buyers } = this.keys.voucher(voucherId);
    const suspended = change.suspended === undefined ? '' : change.suspended ? '1' : '0';
    const [code, stockOrSold, total] = await this.scripts.control(
      voucher,
      buyers,
      totalIfMissing,
      change.total ?? '',
      change.begin?.getTime() ?? '',
      change.end?.getTime() ?? '',
      suspended,
      SALE_KEYS_KEPT_AFTER_END_MS,
      change.limitPerUser ?? '',
    );
    if (code === 1) return { outcome: 'not-published' };
    if (code === 2) return { outcome: 'below-sold', sold: stockOrSold, total };
    return { outcome: 'applied', stock: stockOrSold, total };
  }

  /** Holds the sale for a repair (reserve.lua answers "paused") until `pauseMs` pass or the token's owner lifts it. */
  async pause(sale: Omit<SaleState, 'stock'>, token: string, pauseMs: number): Promise<void> {
    const key = this.keys.voucher(sale.voucherId).voucher;
    await this.scripts.pause(key, token, pauseMs, sale.begin.getTime(), sale.end.getTime(), SALE_KEYS_KEPT_AFTER_END_MS);
  }

  /** Lifts the pause if it is still the token's; true if lifted. */
  async unpause(voucherId: string, token: string): Promise<boolean> {
    return (await this.scripts.unpause(this.keys.voucher(voucherId).voucher, token)) === 1;
  }

  /**
   * Rewrites a paused sale's stock and buyer slots from MySQL's record and lifts the pause, in one
   * step (repair.lua); `unreleased` are cancelled orders whose unit may not be back in Redis yet.
   * Returns the stock written, or -1 when the pause had lapsed (nothing written).
   */
  async repair(
    sale: Omit<SaleState, 'stock'>,
    token: string,
    record: { stock: number; limitPerUser: number; liveSlots: Map<string, number>; unreleased: Array<{ orderId: string; userId: string; slot: number }> },
  ): Promise<number> {
    const { voucher, buyers } = this.keys.voucher(sale.voucherId);
    const markers = record.unreleased.map((order) => this.keys.releaseMarker({ orderId: order.orderId, voucherId: sale.voucherId }));
    return this.scripts.repair(
      2 + markers.length,
      voucher,
      buyers,
      ...markers,
      token,
      record.stock,
      sale.begin.getTime(),
      sale.end.getTime(),
      SALE_KEYS_KEPT_AFTER_END_MS,
      record.limitPerUser,
      record.liveSlots.size,
      ...[...record.liveSlots].flat(),
      ...record.unreleased.flatMap((order) => [order.userId, order.slot]),
    );
  }

  /** The voucher's stock, its buyers' slots and the shard's queued orders of it, read atomically (one slot). */
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
