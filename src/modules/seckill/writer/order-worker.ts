import { setTimeout as sleep } from 'node:timers/promises';
import type { Log } from '../../../infra/logging.js';
import type { RedisClient } from '../../../infra/redis.js';
import { isTransient } from '../../../infra/transient-errors.js';
import type { OrderRepository, PersistOutcome } from '../record/order-repository.js';
import { GroupCommit } from './group-commit.js';
import { ShardLoops } from './shard-loops.js';
import { orderFields, parseEntry, type OrderStream } from './order-stream.js';
import type { SaleSettlement } from '../sale/sale-settlement.js';
import type { AcceptedOrder, NewOrder, OrderEntry } from '../types.js';
import { BrokenCircuitError, WriteBreaker, type WriteBreakerOptions } from './write-breaker.js';

export interface OrderWorkerOptions {
  /** Consumer name in the group. Keep it stable across restarts: a restarted worker finds its own pending entries by it. */
  consumer: string;
  batchSize: number;
  /** An entry delivered this many times without success goes to the dead-letter stream. */
  maxDeliveries: number;
  /** Entries idle this long on another consumer are taken over (that consumer is presumed dead). */
  claimIdleMs: number;
  /** Wait before retrying an entry of our own that failed. */
  retryDelayMs?: number;
  /**
   * A sync order held in Redis this long (its request writes MySQL itself) is streamed for this
   * worker to write: its request died before settling it. Far longer than a request can last.
   */
  handOffHeldAfterMs?: number;
  /** Longest XREADGROUP block; bounds how late stop() and maintenance run. */
  blockMs?: number;
  log: Log;
  /** Told of every finished entry (created, duplicate, user-has-order, dead-letter) and failure. */
  onResult?: (result: PersistOutcome | 'dead-letter' | 'failed') => void;
  /** Told of the orders each write put in MySQL (order-events.ts: they are `created` now). */
  onWritten?: (orders: AcceptedOrder[]) => void;
  /** The circuit breaker on MySQL writes: thresholds, backoff and its observers (metrics). */
  breaker?: WriteBreakerOptions;
}

type Entry = [id: string, fields: string[]];

/** An entry's failed attempt: why, whether for a passing reason only, and the orders it did not write. */
interface EntryFailure {
  message: string;
  transient: boolean;
  failed: ReadonlySet<string>;
}

/** How often acknowledged entries are trimmed from a shard's stream. */
const TRIM_INTERVAL_MS = 60_000;

/**
 * Writes seckill orders from the Redis Streams to MySQL (consumer group `order-writers`).
 *
 * At-least-once delivery + idempotent writes = every accepted order exactly once in MySQL:
 * an entry is XACKed only after its transaction committed; a crash before that leaves it pending,
 * and it is written again (a no-op thanks to the keys) by this consumer on restart (pending list
 * re-read) or by another one after `claimIdleMs` (XAUTOCLAIM). An entry that keeps failing is
 * moved to the dead-letter stream and its stock and buyer mark are given back.
 */
export class OrderWorker {
  private readonly shardLoops: ShardLoops;
  /** Why this worker's latest attempt at an entry failed, and which of its orders; only such entries can be dead-lettered. */
  private readonly lastErrors = new Map<string, EntryFailure>();
  /** Every MySQL write goes through it; while it is open the loops read nothing and only probe. */
  readonly breaker: WriteBreaker;
  /** The shards' batches of new orders, written together when they are ready together (one transaction). */
  readonly writes: GroupCommit<NewOrder>;

  constructor(
    private readonly stream: OrderStream,
    private readonly settlement: SaleSettlement,
    private readonly orders: OrderRepository,
    private readonly options: OrderWorkerOptions,
  ) {
    this.shardLoops = new ShardLoops(stream);
    this.breaker = new WriteBreaker(() => orders.ping(), {
      ...options.breaker,
      onStateChange: (state) => {
        options.breaker?.onStateChange?.(state);
        if (state === 'open') options.log.error('order worker: MySQL writes keep failing; circuit open, entries stay pending until a probe succeeds');
        if (state === 'closed') options.log.info('order worker: MySQL probe succeeded; circuit closed, writing again');
      },
    });
    this.writes = new GroupCommit((group) => this.breaker.write(() => this.orders.persistAllNew(group)), {
      // Every shard's batch at once; more would only make the one transaction longer.
      maxItems: options.batchSize * stream.keys.shards,
      isTransient: isUnavailable,
    });
  }

  start(): void {
    this.shardLoops.start((shard, reader) => this.runShard(shard, reader));
  }

  /** Stops reading, finishes the batch in hand, closes the blocking connections. */
  async stop(): Promise<void> {
    await this.shardLoops.stop();
  }

  private get running(): boolean {
    return this.shardLoops.running;
  }

  /** Processes everything now pending or new in every shard once; for tests and tools. */
  async drainOnce(): Promise<void> {
    for (const shard of this.stream.keys.allShards()) {
      await this.stream.ensureGroup(shard);
      await this.readOwnPending(shard);
      await this.readNew(shard);
      await this.handOffStale(shard);
      await this.retryOwn(shard);
      await this.claimAbandoned(shard);
      await this.stream.trimAcknowledged(shard);
    }
  }

  private async runShard(shard: number, reader: RedisClient): Promise<void> {
    let maintenanceDue = 0;
    let trimDue = Date.now() + TRIM_INTERVAL_MS;
    let recovered = false;
    while (this.running) {
      // MySQL unreachable: read nothing (entries stay where they are, undelivered or pending) and
      // let one probe through when its backoff has passed; the backlog never sets the pace.
      if (!this.breaker.closed) {
        await this.breaker.waitForProbe();
        continue;
      }
      try {
        if (!recovered) {
          await this.stream.ensureGroup(shard);
          await this.readOwnPending(shard);
          recovered = true;
        }
        await this.readNew(shard, reader, this.options.blockMs ?? 1000);
        if (Date.now() >= maintenanceDue) {
          await this.handOffStale(shard);
          await this.retryOwn(shard);
          await this.claimAbandoned(shard);
          maintenanceDue = Date.now() + this.retryDelayMs;
        }
        if (Date.now() >= trimDue) {
          await this.stream.trimAcknowledged(shard);
          trimDue = Date.now() + TRIM_INTERVAL_MS;
        }
      } catch (error) {
        if (!this.running) break;
        if (String(error).includes('NOGROUP')) recovered = false; // stream lost (e.g. Redis failover): recreate
        this.options.log.error({ err: error, shard }, 'order worker: read failed, retrying');
        await sleep(500);
      }
    }
  }

  private get retryDelayMs(): number {
    return this.options.retryDelayMs ?? 1000;
  }

  /** Sync orders whose request never settled them (its instance died) go to the stream; the write is idempotent. */
  private async handOffStale(shard: number): Promise<void> {
    const handed = await this.settlement.handOffStale(shard, this.options.handOffHeldAfterMs ?? 60_000, this.options.batchSize);
    if (handed > 0) this.options.log.warn({ shard, count: handed }, 'order worker: streamed sync orders their request left unsettled');
  }

  /** After a restart: entries delivered to this consumer before the crash and never acknowledged. */
  private async readOwnPending(shard: number): Promise<void> {
    let after = '0';
    for (;;) {
      const entries = await this.stream.read(shard, this.options.consumer, after, this.options.batchSize);
      if (entries.length === 0) return;
      await this.handleBatch(shard, entries);
      after = entries[entries.length - 1]![0];
    }
  }

  private async readNew(shard: number, client?: RedisClient, blockMs = 0): Promise<void> {
    const entries = await this.stream.read(shard, this.options.consumer, '>', this.options.batchSize, blockMs, client);
    if (entries.length > 0) await this.handleBatch(shard, entries);
  }

  /**
   * Our own failed entries: retried after a wait, a batch at a time until none is idle (after an
   * outage the whole backlog of them at once), dead-lettered after too many deliveries. A claim
   * resets an entry's idle time, so each page is new entries and the loop ends.
   */
  private async retryOwn(shard: number): Promise<void> {
    for (;;) {
      const fullPage = await this.retryOwnPage(shard);
      if (!fullPage || !this.breaker.closed || !this.running) return;
    }
  }

  /** One page of retryOwn; true if the page was full (more may be waiting). */
  private async retryOwnPage(shard: number): Promise<boolean> {
    const { consumer, batchSize, maxDeliveries } = this.options;
    const retries: Entry[] = [];
    const page = await this.stream.pendingOf(shard, consumer, this.retryDelayMs, batchSize);
    for (const { id, deliveries } of page) {
      if (!this.breaker.closed) return false; // claiming them now would only count deliveries
      const entry = await this.stream.claim(shard, consumer, this.retryDelayMs, id);
      // Nothing claimed: another consumer took the entry over (XAUTOCLAIM) since XPENDING, so it
      // is not idle enough, or it was deleted from the stream (Redis 7 then drops it from the
      // pending list itself). Either way it is no longer ours: never XACK it here, which would
      // drop an order the other consumer has not written yet.
      if (entry === undefined) continue;
      const [, fields] = entry;
      if (fields === null) {
        await this.stream.acknowledgeGone(shard, [id]); // gone from the stream: nothing left to do
        continue;
      }
      if (deliveries >= maxDeliveries && this.isPoison(id)) await this.deadLetter(shard, [id, fields], deliveries + 1);
      else retries.push([id, fields]);
    }
    if (retries.length > 0) await this.handleBatch(shard, retries);
    return page.length === batchSize;
  }

  /** Entries left pending by consumers that stopped answering (crashed instances). */
  private async claimAbandoned(shard: number): Promise<void> {
    let cursor = '0-0';
    do {
      const { next, entries, deleted } = await this.stream.autoClaim(shard, this.options.consumer, this.options.claimIdleMs, cursor, this.options.batchSize);
      await this.stream.acknowledgeGone(shard, deleted);
      if (entries.length > 0) {
        this.options.log.warn({ shard, count: entries.length }, 'order worker: took over entries of an unresponsive consumer');
        await this.handleBatch(shard, entries);
      }
      cursor = next;
    } while (cursor !== '0-0' && this.running);
  }

  /**
   * The entries' orders, written in chunks of about `batchSize` orders (whole entries: an entry is
   * acknowledged once all its orders are in MySQL). reserve.lua writes an entry per batch, so a
   * read of `batchSize` entries may hold many times that many orders.
   */
  private async handleBatch(shard: number, entries: Entry[]): Promise<void> {
    let chunk: OrderEntry[] = [];
    for (const [id, fields] of entries) {
      const orders = parseEntry(id, fields);
      if (orders === null) {
        this.lastErrors.set(id, { message: 'malformed entry: orderId, userId and voucherId must be decimal ids', transient: false, failed: new Set() });
        await this.deadLetter(shard, [id, fields], 1);
        continue;
      }
      for (const order of orders) chunk.push({ id, order });
      if (chunk.length >= this.options.batchSize) {
        await this.writeChunk(shard, chunk);
        chunk = [];
      }
    }
    if (chunk.length > 0) await this.writeChunk(shard, chunk);
  }

  private async writeChunk(shard: number, orders: OrderEntry[]): Promise<void> {
    const together = await this.writeTogether(shard, orders);
    if (together === 'each-alone') await Promise.all([...byEntry(orders)].map(([id, entryOrders]) => this.handleEntry(shard, id, entryOrders)));
  }

  /**
   * The common case, fast: every order of the batch is new, so one transaction writes them all
   * (with the batches other shards read meanwhile: group-commit.ts) and one MULTI acknowledges
   * them. `each-alone` when that does not hold (a redelivered or conflicting order, stock):
   * nothing of the batch was written, and each entry then goes its own way. `unavailable` when
   * MySQL failed or the circuit is open: the entries stay pending, retried later, and not one by
   * one now (that would multiply the attempts on a MySQL that is down).
   */
  private async writeTogether(shard: number, entries: OrderEntry[]): Promise<'written' | 'each-alone' | 'unavailable'> {
    try {
      await this.writes.submit(entries.map((entry) => entry.order));
    } catch (error) {
      if (!isUnavailable(error)) return 'each-alone';
      for (const [id, orders] of byEntry(entries))
        this.lastErrors.set(id, { message: String(error), transient: true, failed: new Set(orders.map((entry) => entry.order.orderId)) });
      if (!(error instanceof BrokenCircuitError)) {
        this.options.onResult?.('failed');
        this.options.log.warn({ err: error, shard, count: entries.length }, 'order worker: writing a batch failed; its entries stay pending');
      }
      return 'unavailable';
    }
    for (const { id } of entries) {
      this.lastErrors.delete(id);
      this.options.onResult?.('created');
    }
    this.options.onWritten?.(entries.map((entry) => entry.order));
    try {
      await this.stream.acknowledge(shard, entries);
    } catch (error) {
      // Written but not acknowledged: redelivered later, found written (duplicate), acknowledged then.
      this.options.log.warn({ err: error, shard, count: entries.length }, 'order worker: acknowledging written orders failed; they stay pending');
    }
    return 'written';
  }

  /** An entry's orders each in a transaction of its own; the entry is acknowledged when every one of them is in MySQL (or dropped). */
  private async handleEntry(shard: number, id: string, orders: OrderEntry[]): Promise<void> {
    const failed = new Set<string>();
    let failure: Omit<EntryFailure, 'failed'> | undefined;
    const errors = await Promise.all(orders.map(({ order }) => this.writeAlone(order)));
    for (const [index, error] of errors.entries()) {
      if (error === null) continue;
      failed.add(orders[index]!.order.orderId);
      // An entry is poison only when each of its failures is its orders' own: one that may yet be written is never given up.
      failure = { message: failure?.message ?? error.message, transient: (failure?.transient ?? false) || error.transient };
    }
    if (failure !== undefined) {
      this.lastErrors.set(id, { ...failure, failed });
      return;
    }
    this.lastErrors.delete(id);
    await this.stream.acknowledge(shard, orders).catch((error: unknown) => {
      this.options.log.warn({ err: error, entry: id }, 'order worker: acknowledging written orders failed; they stay pending');
    });
  }

  /** One order's write; null when it is in MySQL now (or dropped), else why not. */
  private async writeAlone(order: OrderEntry['order']): Promise<{ message: string; transient: boolean } | null> {
    try {
      const outcome = await this.breaker.write(() => this.orders.persist(order));
      if (outcome === 'user-has-order') {
        // Redis had lost the buyer mark (failover); MySQL's unique key kept the rule. Give the unit back.
        this.options.log.warn({ order }, 'order worker: user already has a live order for this voucher; order dropped');
        await this.settlement.release(order);
      }
      this.options.onResult?.(outcome);
      if (outcome === 'created') this.options.onWritten?.([order]);
      return null;
    } catch (error) {
      // The circuit is open: MySQL was not even tried; the entry waits for it to close.
      if (error instanceof BrokenCircuitError) return { message: 'MySQL circuit open', transient: true };
      this.options.onResult?.('failed');
      this.options.log.warn({ err: error, order }, 'order worker: writing the order failed; it stays pending');
      return { message: String(error), transient: isTransient(error) };
    }
  }

  /**
   * Dead-letter only what this worker saw fail for a reason of the entry itself. An outage
   * (MySQL down, deadlock, lock timeout) must not turn accepted orders into dead letters however
   * long it lasts, and an entry taken over from another consumer is tried here first.
   */
  private isPoison(entryId: string): boolean {
    const error = this.lastErrors.get(entryId);
    return error !== undefined && !error.transient;
  }

  /**
   * Gives back the units of the entry's orders that failed (idempotent), then records them in the
   * dead-letter stream and acknowledges the entry in one MULTI; its other orders are in MySQL. A
   * crash in between only means doing it again.
   */
  private async deadLetter(shard: number, [id, fields]: Entry, deliveries: number): Promise<void> {
    const failure = this.lastErrors.get(id);
    const error = failure?.message ?? 'unknown';
    const orders = parseEntry(id, fields) ?? [];
    const given = orders.filter((order) => failure?.failed.has(order.orderId) ?? true);
    for (const order of given) await this.settlement.release(order);
    await this.stream.deadLetter(shard, id, orders.length === 0 ? [fields] : given.map(orderFields), orders, deliveries, error);
    this.lastErrors.delete(id);
    for (let i = 0; i < Math.max(1, given.length); i++) this.options.onResult?.('dead-letter');
    this.options.log.error({ entry: id, orders: given, deliveries, error }, 'order worker: orders moved to the dead-letter stream');
  }
}

/** The orders grouped by their entry, in order. */
function byEntry(orders: readonly OrderEntry[]): Map<string, OrderEntry[]> {
  const entries = new Map<string, OrderEntry[]>();
  for (const entry of orders) {
    const group = entries.get(entry.id);
    if (group === undefined) entries.set(entry.id, [entry]);
    else group.push(entry);
  }
  return entries;
}

/** MySQL did not answer or the circuit is open: a write to retry later as it is, not order by order. */
export function isUnavailable(error: unknown): boolean {
  return error instanceof BrokenCircuitError || isTransient(error);
}
