import { duplicateRedis, type RedisClient } from '../../../infra/redis.js';
import { ORDER_GROUP, queuedByUserMember, type SaleKeys } from '../keys.js';
import type { AcceptedOrder, OrderEntry, QueuedOrder } from '../types.js';
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

  /**
   * The orders are in MySQL (or given up): XACK their entries and drop them from the queued hash
   * and the users' queued lists, in one MULTI. Every order of each entry must be among them.
   */
  async acknowledge(shard: number, entries: OrderEntry[]): Promise<void> {
    const { stream, queued, queuedByUser } = this.keys.shard(shard);
    await this.redis
      .multi()
      .xack(stream, ORDER_GROUP, ...new Set(entries.map((entry) => entry.id)))
      .hdel(queued, ...entries.map((entry) => entry.order.orderId))
      .zrem(queuedByUser, ...entries.map((entry) => queuedByUserMember(entry.order)))
      .exec();
  }

  /** Acknowledges entries that are gone from the stream (nothing left to write). */
  async acknowledgeGone(shard: number, ids: string[]): Promise<void> {
    if (ids.length > 0) await this.redis.xack(this.keys.shard(shard).stream, ORDER_GROUP, ...ids);
  }

  /**
   * Records given-up orders in the dead-letter stream, one record each (an order's fields, or
   * the entry's raw fields when it holds no valid order), and acknowledges their entry, in one
   * MULTI. `orders` are all the entry's orders: those written meanwhile leave the queued records too.
   */
  async deadLetter(shard: number, id: string, records: string[][], orders: AcceptedOrder[], deliveries: number, error: string): Promise<void> {
    const { stream, deadLetters, queued, queuedByUser } = this.keys.shard(shard);
    const multi = this.redis.multi();
    for (const fields of records) multi.xadd(deadLetters, '*', ...fields, 'sourceId', id, 'deliveries', String(deliveries), 'error', error.slice(0, 1000));
    multi.xack(stream, ORDER_GROUP, id);
    if (orders.length > 0) {
      multi.hdel(queued, ...orders.map((order) => order.orderId));
      multi.zrem(queuedByUser, ...orders.map(queuedByUserMember));
    }
    await multi.exec();
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

const ID = /^[1-9]\d{0,19}$/;
const SLOT = /^[1-9]\d?$/;
const MS = /^\d{1,15}$/;

/**
 * The orders of a stream entry, or null when it is malformed (any order in it not three decimal
 * ids and a slot 1..99). Two shapes:
 * - reserve.lua's, one entry per batch: `acceptedMs`, and `orders` "orderId:userId:voucherId:slot"
 *   joined by commas, every order accepted at that time;
 * - one order: `orderId`, `userId`, `voucherId`, `slot`, `acceptedMs` (hand-off.lua's, the dead
 *   letters' and the broker's messages; reserve.lua's before batch entries).
 */
export function parseEntry(entryId: string, fields: string[]): AcceptedOrder[] | null {
  const packed = fieldOf(fields, 'orders');
  if (packed === undefined) {
    const order = parseOrder(entryId, fields);
    return order === null ? null : [order];
  }
  const accepted = fieldOf(fields, 'acceptedMs') ?? entryId.split('-')[0]!;
  if (!MS.test(accepted)) return null;
  const acceptedMs = Number(accepted);
  const orders: AcceptedOrder[] = [];
  for (const one of packed.split(',')) {
    const [orderId = '', userId = '', voucherId = '', slot = '', extra] = one.split(':');
    if (extra !== undefined || !ID.test(orderId) || !ID.test(userId) || !ID.test(voucherId) || !SLOT.test(slot)) return null;
    orders.push({ orderId, userId, voucherId, slot: Number(slot), acceptedMs });
  }
  return orders;
}

/** One order's entry fields: what hand-off.lua writes, a dead letter records and a broker message carries. */
export function orderFields(order: AcceptedOrder): string[] {
  return ['orderId', order.orderId, 'userId', order.userId, 'voucherId', order.voucherId, 'slot', String(order.slot), 'acceptedMs', String(order.acceptedMs)];
}

function fieldOf(fields: string[], name: string): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

/**
 * The order of a one-order entry, or null when its fields are not three decimal ids and a slot
 * 1..99 (an entry without a slot was written before per-user limits: slot 1). Its acceptance time
 * is the entry's `acceptedMs`; an entry written before that field existed falls back to the entry
 * id's time (Redis time of the XADD: the acceptance itself for reserve.lua's entries, the hand-off
 * for a sync order's).
 */
export function parseOrder(entryId: string, fields: string[]): AcceptedOrder | null {
  const map = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) map.set(fields[i]!, fields[i + 1]!);
  const orderId = map.get('orderId');
  const userId = map.get('userId');
  const voucherId = map.get('voucherId');
  const isId = (value: string | undefined): value is string => value !== undefined && ID.test(value);
  const slot = map.get('slot') ?? '1';
  if (!SLOT.test(slot)) return null;
  const accepted = map.get('acceptedMs') ?? entryId.split('-')[0]!;
  if (!MS.test(accepted)) return null;
  return isId(orderId) && isId(userId) && isId(voucherId) ? { orderId, userId, voucherId, slot: Number(slot), acceptedMs: Number(accepted) } : null;
}
