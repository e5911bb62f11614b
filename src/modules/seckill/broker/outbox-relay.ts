import { setTimeout as sleep } from 'node:timers/promises';
import type { Log } from '../../../infra/logging.js';
import type { RedisClient } from '../../../infra/redis.js';
import { ORDER_GROUP } from '../keys.js';
import type { SaleSettlement } from '../sale/sale-settlement.js';
import { orderFields, parseEntry, type OrderStream } from '../writer/order-stream.js';
import type { OrderEntry } from '../types.js';
import { ShardLoops } from '../writer/shard-loops.js';
import type { PublishOutcome } from './confirmed-publisher.js';
import type { OrderPublisher } from './order-publisher.js';

export interface OutboxRelayOptions {
  /** Its name in the stream's consumer group (the order worker's: SECKILL_CONSUMER); keep it stable across restarts. */
  consumer: string;
  /** Entries read per shard, and orders published at once (SECKILL_RABBITMQ_PUBLISH_WINDOW). */
  window: number;
  /** Entries idle this long on another consumer are taken over (that relay or worker is presumed dead). */
  claimIdleMs: number;
  /** A sync order held in Redis this long is streamed (its request died), as the order worker does. */
  handOffHeldAfterMs?: number;
  /** Longest XREADGROUP block; bounds how late stop() and maintenance run. */
  blockMs?: number;
  /** First wait after a publish that was not confirmed; it doubles with each failure, up to 5 s. */
  retryDelayMs?: number;
  log: Log;
  /** Told of every publish's outcome (metrics). */
  onPublished?: (outcome: PublishOutcome) => void;
}

type Entry = [id: string, fields: string[]];

const TRIM_INTERVAL_MS = 60_000;
const MAINTENANCE_INTERVAL_MS = 1_000;
const MAX_BACKOFF_MS = 5_000;

/**
 * The outbox relay: moves each shard's stream (reserve.lua's outbox) to the RabbitMQ order queue.
 * Per shard, one loop reads up to `window` entries with the consumer group, publishes their orders
 * (a message per order; reserve.lua writes an entry per batch) with publisher confirms, and XACKs
 * the entries whose every order the broker confirmed. An entry is XACKed only after those confirms;
 * the queued record stays until the writer has the order in MySQL. Whatever was
 * not confirmed (broker away or stalled, queue full, a crash between publish and XACK) stays
 * pending and is published again: by this relay after a backoff (its own pending list, re-read from
 * the start), or by another after `claimIdleMs` (XAUTOCLAIM). A second copy is dropped by the
 * writer (the order id is MySQL's primary key).
 */
export class OutboxRelay {
  private readonly shardLoops: ShardLoops;

  constructor(
    private readonly stream: OrderStream,
    private readonly settlement: SaleSettlement,
    private readonly redis: RedisClient,
    private readonly publisher: OrderPublisher,
    private readonly options: OutboxRelayOptions,
  ) {
    this.shardLoops = new ShardLoops(stream);
  }

  start(): void {
    this.shardLoops.start((shard, reader) => this.runShard(shard, reader));
  }

  /** Stops reading; publishes in flight finish (confirmed or timed out) before it resolves. */
  async stop(): Promise<void> {
    await this.shardLoops.stop();
  }

  private get running(): boolean {
    return this.shardLoops.running;
  }

  private async runShard(shard: number, reader: RedisClient): Promise<void> {
    let recovered = false;
    let failures = 0;
    let maintenanceDue = 0;
    let trimDue = Date.now() + TRIM_INTERVAL_MS;
    while (this.running) {
      // The broker is away: read nothing (entries wait in the stream, undelivered) until it is back.
      if (!this.publisher.ready) {
        await sleep(200);
        continue;
      }
      try {
        let relayed = true;
        if (!recovered) {
          await this.stream.ensureGroup(shard);
          relayed = await this.relayOwnPending(shard);
          recovered = relayed;
        }
        if (relayed) {
          const entries = await this.stream.read(shard, this.options.consumer, '>', this.options.window, this.options.blockMs ?? 1000, reader);
          relayed = await this.relay(shard, entries);
        }
        if (relayed && Date.now() >= maintenanceDue) {
          await this.handOffStale(shard);
          relayed = await this.claimAbandoned(shard);
          maintenanceDue = Date.now() + MAINTENANCE_INTERVAL_MS;
        }
        if (Date.now() >= trimDue) {
          await this.stream.trimAcknowledged(shard);
          trimDue = Date.now() + TRIM_INTERVAL_MS;
        }
        if (relayed) {
          failures = 0;
          continue;
        }
      } catch (error) {
        if (!this.running) break;
        this.options.log.error({ err: error, shard }, 'outbox relay: reading the stream failed, retrying');
      }
      // Not all confirmed, or Redis failed: our pending entries are published again after a wait.
      recovered = false;
      failures += 1;
      await sleep(Math.min(MAX_BACKOFF_MS, (this.options.retryDelayMs ?? 100) * 2 ** (failures - 1)));
    }
  }

  /** Entries this consumer read before (a crash, a failed publish), page by page from the start; false at the first that is not confirmed. */
  private async relayOwnPending(shard: number): Promise<boolean> {
    let after = '0';
    for (;;) {
      const entries = await this.stream.read(shard, this.options.consumer, after, this.options.window);
      if (entries.length === 0) return true;
      if (!(await this.relay(shard, entries))) return false;
      after = entries[entries.length - 1]![0];
    }
  }

  /** Entries left pending by consumers that stopped answering (crashed relays or workers). */
  private async claimAbandoned(shard: number): Promise<boolean> {
    let cursor = '0-0';
    do {
      const { next, entries, deleted } = await this.stream.autoClaim(shard, this.options.consumer, this.options.claimIdleMs, cursor, this.options.window);
      await this.acknowledge(shard, deleted);
      if (entries.length > 0) {
        this.options.log.warn({ shard, count: entries.length }, 'outbox relay: took over entries of an unresponsive consumer');
        if (!(await this.relay(shard, entries))) return false;
      }
      cursor = next;
    } while (cursor !== '0-0' && this.running);
    return true;
  }

  private async handOffStale(shard: number): Promise<void> {
    const handed = await this.settlement.handOffStale(shard, this.options.handOffHeldAfterMs ?? 60_000, this.options.window);
    if (handed > 0) this.options.log.warn({ shard, count: handed }, 'outbox relay: streamed sync orders their request left unsettled');
  }

  /**
   * Publishes the entries' orders, a message per order, in windows of whole entries of about
   * `window` orders, and after each window XACKs its entries whose every order the broker
   * confirmed (one XACK: a crash re-publishes at most the window in hand); true when every one
   * was. An entry that holds no valid order is dead-lettered in the stream, as the worker does. A
   * window with a failure ends the round: the rest stay pending for the next.
   */
  private async relay(shard: number, entries: Entry[]): Promise<boolean> {
    let window: OrderEntry[] = [];
    for (const [id, fields] of entries) {
      const orders = parseEntry(id, fields);
      if (orders === null) {
        await this.stream.deadLetter(shard, id, [fields], [], 1, 'malformed entry: orderId, userId and voucherId must be decimal ids');
        continue;
      }
      for (const order of orders) window.push({ id, order });
      if (window.length < this.options.window) continue;
      if (!(await this.publishWindow(shard, window))) return false;
      window = [];
    }
    return window.length === 0 || this.publishWindow(shard, window);
  }

  /** One window's publishes, then the XACK of its entries whose orders were all confirmed; true when all were. */
  private async publishWindow(shard: number, window: OrderEntry[]): Promise<boolean> {
    const outcomes = await Promise.all(window.map(({ id, order }) => this.publisher.publish(shard, id, orderFields(order), order.orderId)));
    const unconfirmed = new Set<string>();
    outcomes.forEach((outcome, index) => {
      this.options.onPublished?.(outcome);
      if (outcome !== 'confirmed') unconfirmed.add(window[index]!.id);
    });
    await this.acknowledge(
      shard,
      [...new Set(window.map(({ id }) => id))].filter((id) => !unconfirmed.has(id)),
    );
    const failed = outcomes.filter((outcome) => outcome !== 'confirmed');
    if (failed.length === 0) return true;
    this.options.log.warn({ shard, failed: failed.length, outcomes: countOf(failed) }, 'outbox relay: orders not confirmed by RabbitMQ stay in the stream');
    return false;
  }

  /** XACK only: the queued record stays until the writer has the order in MySQL (GET order reads it). */
  private async acknowledge(shard: number, ids: string[]): Promise<void> {
    if (ids.length > 0) await this.redis.xack(this.stream.keys.shard(shard).stream, ORDER_GROUP, ...ids);
  }
}

function countOf(values: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}
