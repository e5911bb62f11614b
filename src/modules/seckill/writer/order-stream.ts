import { duplicateRedis, type RedisClient } from '../../../infra/redis.js';
import { ORDER_GROUP, queuedByUserMember, type SaleKeys } from '../keys.js';
import type { OrderEntry, QueuedOrder } from '../types.js';
import { defineStreamScripts, type StreamCounts, type StreamScripts } from './stream-scripts.js';

/** A stream entry as XREADGROUP and XCLAIM return it; fields are null for an entry deleted from the stream. */
export type StreamEntry = [id: string, fields: string[] | null];
export interface ShardStats extends StreamCounts {
  shard: number;
}

/**
 * The order streams `{seckill:N}:orders` and their consumer group `order-writers`: what
 * reserve.lua appends, the worker reads, acknowledges, claims and dead-letters here. Delivery is
 * at least once; an entry is acknowledged only after its order is in MySQL.
 */
export class OrderStream {
  private readonly scripts: StreamScripts;

  constructor(
    private readonly redis: RedisClient,
    readonly keys: SaleKeys,
  ) {
    this.scripts = defineStreamScripts(redis, keys);
  }

  /**
   * A connection of its own for blocking reads (XREADGROUP BLOCK holds its connection), without
   * the usual command timeout, which would cut a legitimate block short (each read is bounded at
   * its BLOCK time instead: src/infra/redis.ts duplicateRedis).
   */
  connectionForBlockingReads(): RedisClient {
    return duplicateRedis(this.redis, null);
  }

  /** Creates the shard's stream and group if missing; from id 0, not $: entries appended before the group existed are orders too. */
  async ensureGroup(shard: number): Promise<void> {
    await this.scripts.ensureGroup(shard);
  }

  /**
   * XREADGROUP of the shard: `from` '>' for new entries, an id for the consumer's own pending
   * ones after it. A blocking read (blockMs > 0) holds its connection: pass one of its own.
   */
  async read(shard: number, consumer: string, from: string, count: number, blockMs = 0, client = this.redis): Promise<Array<[string, string[]]>> {
    const args: Array<string | number> = ['GROUP', ORDER_GROUP, consumer, 'COUNT', count];
    if (blockMs > 0) args.push('BLOCK', blockMs);
    const xreadgroup = client.xreadgroup.bind(client) as (...a: Array<string | number>) => Promise<unknown>;
    const reply = (await xreadgroup(...args, 'STREAMS', this.keys.shard(shard).stream, from)) as Array<[string, StreamEntry[]]> | null;
    // A pending entry deleted from the stream comes back with null fields: nothing to write.
    return (reply?.[0]?.[1] ?? []).filter((entry): entry is [string, string[]] => entry[1] !== null);
  }

  /** The consumer's own entries idle at least `idleMs`, with how often each was delivered. */
  async pendingOf(shard: number, consumer: string, idleMs: number, count: number): Promise<Array<{ id: string; deliveries: number }>> {
    const pending = (await this.redis.xpending(this.keys.shard(shard).stream, ORDER_GROUP, 'IDLE', idleMs, '-', '+', count, consumer)) as Array<
      [string, string, number, number]
    >;
    return pending.map(([id, , , deliveries]) => ({ id, deliveries }));
  }

  /**
   * XCLAIM of one entry idle at least `idleMs`: undefined when another consumer took it since (it
   * is not idle enough) or Redis dropped it; fields null when it was deleted from the stream.
   */
  async claim(shard: number, consumer: string, idleMs: number, id: string): Promise<StreamEntry | undefined> {
    const claimed = (await this.redis.xclaim(this.keys.shard(shard).stream, ORDER_GROUP, consumer, idleMs, id)) as StreamEntry[];
    return claimed[0];
  }

  /** XAUTOCLAIM: entries idle at least `idleMs` on any consumer, from `cursor`; `deleted` are ids gone from the stream. */
  async autoClaim(
    shard: number,
    consumer: string,
    idleMs: number,
    cursor: string,
    count: number,
  ): Promise<{ next: string; entries: Array<[string, string[]]>; deleted: string[] }> {
    const [next, entries, deleted = []] = (await this.redis.xautoclaim(
      this.keys.shard(shard).stream,
      ORDER_GROUP,
      consumer,
      idleMs,
      cursor,
      'COUNT',
      count,
    )) as [string, StreamEntry[], string[]?];
    return { next, entries: entries.filter((entry): entry is [string, string[]] => entry[1] !== null), deleted };
  }

  /** The orders are in MySQL: XACK their entries and drop them from the queued hash, in one MULTI. */
  async acknowledge(shard: number, entries: OrderEntry[]): Promise<void> {
    const { stream, queued, queuedByUser } = this.keys.shard(shard);
    await this.redis
      .multi()
      .xack(stream, ORDER_GROUP, ...entries.map((entry) => entry.id))
      .hdel(queued, ...entries.map((entry) => entry.order.orderId))
      .zrem(queuedByUser, ...entries.map((entry) => queuedByUserMember(entry.order)))
      .exec();
  }

  /** Acknowledges entries that are gone from the stream (nothing left to write). */
  async acknowledgeGone(shard: number, ids: string[]): Promise<void> {
    if (ids.length > 0) await this.redis.xack(this.keys.shard(shard).stream, ORDER_GROUP, ...ids);
  }

  /** Records the entry in the dead-letter stream and acknowledges it, in one MULTI. */
  async deadLetter(shard: number, id: string, fields: string[], deliveries: number, error: string): Promise<void> {
    const { stream, deadLetters } = this.keys.shard(shard);
    await this.redis
      .multi()
      .xadd(deadLetters, '*', ...fields, 'sourceId', id, 'deliveries', String(deliveries), 'error', error.slice(0, 1000))
      .xack(stream, ORDER_GROUP, id)
      .exec();
  }

  /** Drops the shard's entries the group has acknowledged; returns how many. */
  async trimAcknowledged(shard: number): Promise<number> {
    return this.scripts.trimAcknowledged(shard);
  }

  /** Per shard, for monitoring: one script call each (stream-stats.lua). */
  async stats(): Promise<ShardStats[]> {
    return Promise.all(this.keys.allShards().map(async (shard) => ({ shard, ...(await this.scripts.streamStats(shard)) })));
  }

  /** The order if it was accepted in Redis and is not yet confirmed in MySQL. */
  async findQueued(orderId: string): Promise<QueuedOrder | null> {
    // One HGET per shard; not a pipeline, which Redis Cluster refuses across hash slots.
    const values = await Promise.all(this.keys.allShards().map((shard) => this.redis.hget(this.keys.shard(shard).queued, orderId)));
    const value = values.find((found) => found !== null);
    if (!value) return null;
    const [userId = '', voucherId = '', slot = '1'] = value.split(':');
    return { orderId, userId, voucherId, slot: Number(slot) };
  }
}

/**
 * The order of an entry reserve.lua wrote, or null when its fields are not three decimal ids and
 * a slot 1..99 (an entry without a slot was written before per-user limits: slot 1). Its
 * acceptance time is the entry's `acceptedMs`; an entry written before that field existed falls
 * back to the entry id's time (Redis time of the XADD: the acceptance itself for reserve.lua's
 * entries, the hand-off for a sync order's).
 */
export function parseOrder(entryId: string, fields: string[]): (QueuedOrder & { acceptedMs: number }) | null {
  const map = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) map.set(fields[i]!, fields[i + 1]!);
  const orderId = map.get('orderId');
  const userId = map.get('userId');
  const voucherId = map.get('voucherId');
  const isId = (value: string | undefined): value is string => value !== undefined && /^[1-9]\d{0,19}$/.test(value);
  const slot = map.get('slot') ?? '1';
  if (!/^[1-9]\d?$/.test(slot)) return null;
  const accepted = map.get('acceptedMs') ?? entryId.split('-')[0]!;
  if (!/^\d{1,15}$/.test(accepted)) return null;
  return isId(orderId) && isId(userId) && isId(voucherId) ? { orderId, userId, voucherId, slot: Number(slot), acceptedMs: Number(accepted) } : null;
}
