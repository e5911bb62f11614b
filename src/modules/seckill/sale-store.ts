import type { RedisClient } from '../../infra/redis.js';
import type { Scripts } from '../../lib/redis-scripts/index.js';
import { RELEASE_MARKER_TTL_SECONDS, SALE_KEYS_KEPT_AFTER_END_MS, type SaleKeys } from './keys.js';
import { AcknowledgedReserve, type ReplicaAckOptions } from './replica-acks.js';
import { defineSaleScripts, reserveArgs, toReserveOutcome, type SaleScripts } from './scripts.js';
import type { QueuedOrder, ReserveOutcome, SaleState } from './types.js';

/** An administrator's change to a sale; undefined fields are left as they are. */
export interface SaleControl {
  total?: number;
  begin?: Date;
  end?: Date;
  suspended?: boolean;
}

export type ControlOutcome =
  { outcome: 'applied'; stock: number; total: number } | { outcome: 'not-published' } | { outcome: 'below-sold'; sold: number; total: number };

/** A voucher's sale as the reconciliation reads it, atomically (one slot). */
export interface SaleSnapshot {
  stock: number | null;
  buyers: Set<string>;
  /** orderId → userId of this voucher's entries in the shard's queued hash. */
  queued: Map<string, string>;
}

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
    );
    return published === 1;
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
  async reserve(order: QueuedOrder): Promise<ReserveOutcome> {
    if (this.acknowledged) return this.acknowledged.reserve(order);
    return toReserveOutcome(await this.scripts.reserve(...reserveArgs(this.keys, order)));
  }

  /**
   * The sync strategy's reserve: the same decision on the same stock and buyers as `reserve`,
   * but the accepted order is held in the in-flight set, not streamed: the caller writes MySQL,
   * then calls `settle` (written), `release` (refused by MySQL) or `handOff` (failed, or unknown).
   */
  async hold(order: QueuedOrder): Promise<ReserveOutcome> {
    return toReserveOutcome(await this.scripts.reserve(...reserveArgs(this.keys, order, 'hold')));
  }

  /** A held order is in MySQL: no longer in flight nor queued. */
  async settle(order: QueuedOrder): Promise<void> {
    const { inFlight, queued } = this.keys.voucher(order.voucherId);
    const replies = await this.redis.multi().zrem(inFlight, order.orderId).hdel(queued, order.orderId).exec();
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

  /** Gives an order's unit and buyer mark back, exactly once per order (release.lua). */
  async release(order: QueuedOrder): Promise<boolean> {
    const { voucher, buyers, queued, inFlight } = this.keys.voucher(order.voucherId);
    const marker = this.keys.releaseMarker(order);
    const released = (await this.scripts.release(voucher, buyers, marker, queued, order.userId, order.orderId, RELEASE_MARKER_TTL_SECONDS)) === 1;
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
   * Rewrites a paused sale's stock and buyers from MySQL's record and lifts the pause, in one
   * step (repair.lua); `unreleased` are cancelled orders whose unit may not be back in Redis yet.
   * Returns the stock written, or -1 when the pause had lapsed (nothing written).
   */
  async repair(
    sale: Omit<SaleState, 'stock'>,
    token: string,
    record: { stock: number; liveBuyers: Set<string>; unreleased: Array<{ orderId: string; userId: string }> },
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
      record.liveBuyers.size,
      ...record.liveBuyers,
      ...record.unreleased.map((order) => order.userId),
    );
  }

  /** The voucher's stock, its buyers and the shard's queued orders of it, read atomically (one slot). */
  async snapshot(voucherId: string): Promise<SaleSnapshot> {
    const keys = this.keys.voucher(voucherId);
    const replies = await this.redis.multi().hget(keys.voucher, 'stock').smembers(keys.buyers).hgetall(keys.queued).exec();
    if (!replies) throw new Error('the Redis read of the sale was aborted');
    const failure = replies.find(([error]) => error);
    if (failure) throw failure[0]!;
    const [[, stock], [, buyers], [, queuedAll]] = replies as [[null, string | null], [null, string[]], [null, Record<string, string>]];
    const queued = new Map<string, string>();
    for (const [orderId, value] of Object.entries(queuedAll)) {
      const [userId = '', ofVoucher = ''] = value.split(':');
      if (ofVoucher === voucherId) queued.set(orderId, userId);
    }
    return { stock: stock === null ? null : Number(stock), buyers: new Set(buyers), queued };
  }

  /** Whether the user holds one of the voucher's units in Redis (an order accepted and not cancelled). */
  async isBuyer(voucherId: string, userId: string): Promise<boolean> {
    return (await this.redis.sismember(this.keys.voucher(voucherId).buyers, userId)) === 1;
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
