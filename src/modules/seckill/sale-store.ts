import { readFileSync } from 'node:fs';
import type { Result } from 'ioredis';
import { closeRedis, type RedisClient } from '../../infra/redis.js';

/**
 * The Redis side of flash sales: stock, sale window, buyers and the order streams.
 *
 * Keys are grouped in shards by the hash tag `{seckill:N}`, N = voucherId mod shards: all keys one
 * script touches (a voucher's stock, its buyers, its shard's stream) live in one Redis Cluster slot,
 * and different vouchers still spread over the cluster.
 */
const script = (name: string) => readFileSync(new URL(`./lua/${name}.lua`, import.meta.url), 'utf8');

declare module 'ioredis' {
  interface RedisCommander<Context> {
    seckillPublish(voucher: string, stock: number, beginMs: number, endMs: number, keepMs: number): Result<number, Context>;
    seckillReserve(
      voucher: string, buyers: string, stream: string, queued: string,
      userId: string, orderId: string, voucherId: string, keepMs: number,
    ): Result<number, Context>;
    seckillEnsureGroup(stream: string, group: string): Result<number, Context>;
    seckillPause(voucher: string, token: string, pauseMs: number, beginMs: number, endMs: number, keepMs: number): Result<number, Context>;
    seckillUnpause(voucher: string, token: string): Result<number, Context>;
    seckillRepair(numberOfKeys: number, ...keysAndArgs: Array<string | number>): Result<number, Context>;
    seckillTrimAcknowledged(stream: string, group: string): Result<number, Context>;
    seckillStreamStats(stream: string, deadLetters: string, group: string): Result<[number, number, number, number], Context>;
    seckillRelease(
      voucher: string, buyers: string, marker: string, queued: string,
      userId: string, orderId: string, markerTtlSeconds: number,
    ): Result<number, Context>;
  }
}

export type ReserveOutcome = 'accepted' | 'not-started' | 'ended' | 'sold-out' | 'already-bought' | 'unknown-voucher' | 'paused';

const RESERVE_OUTCOMES: ReserveOutcome[] = ['accepted', 'not-started', 'ended', 'sold-out', 'already-bought', 'unknown-voucher', 'paused'];

/** How long the "already released" marker of an order is kept (a retry comes within minutes). */
const RELEASE_MARKER_TTL_SECONDS = 7 * 24 * 3600;

/** A sale's stock hash and buyer set expire this long after the sale ends. */
export const SALE_KEYS_KEPT_AFTER_END_MS = 7 * 24 * 3600_000;

export const ORDER_GROUP = 'order-writers';

export interface SeckillVoucherState {
  voucherId: string;
  stock: number;
  begin: Date;
  end: Date;
}

export interface QueuedOrder {
  orderId: string;
  userId: string;
  voucherId: string;
}

/**
 * Replica acknowledgement of accepted orders (SECKILL_REPLICA_ACKS): before an accepted order is
 * answered, `WAIT acks timeoutMs` must have seen that many replicas of the voucher's master
 * receive it, so a failover to one of them does not lose it.
 */
export interface ReplicaAckOptions {
  /** Replicas that must confirm; 0 = answer without waiting (Redis's asynchronous replication). */
  acks: number;
  timeoutMs: number;
  /**
   * `accepted` orders were answered although only `acknowledged` replicas confirmed them in time
   * (or the wait could not be made, acknowledged = -1). They are in the stream and will be
   * written; they are only less durable. For a metric and a log line.
   */
  onTimeout?: (accepted: number, acknowledged: number) => void;
}

interface PendingReserve {
  order: QueuedOrder;
  resolve: (outcome: ReserveOutcome) => void;
  reject: (error: unknown) => void;
}

/** Most orders per group commit (one pipeline of scripts + one WAIT). */
const MAX_ACK_BATCH = 256;

/** Redis Cluster redirections and transient slot states: the pipeline reached a node that does not (or not yet) serve the slot. */
const REDIRECTED = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN)\b/;

export class SeckillStore {
  private readonly waiting = new Map<number, PendingReserve[]>();
  private readonly flushing = new Set<number>();
  /** Connections of their own for reserve + WAIT (created on first use), see reserveAcknowledged. */
  private ackClient: RedisClient | undefined;

  constructor(
    readonly redis: RedisClient,
    readonly shards: number,
    private readonly replicaAck: ReplicaAckOptions = { acks: 0, timeoutMs: 0 },
  ) {
    redis.defineCommand('seckillPublish', { numberOfKeys: 1, lua: script('publish-voucher') });
    redis.defineCommand('seckillReserve', { numberOfKeys: 4, lua: script('reserve') });
    redis.defineCommand('seckillRelease', { numberOfKeys: 4, lua: script('release') });
    redis.defineCommand('seckillEnsureGroup', { numberOfKeys: 1, lua: script('ensure-group') });
    redis.defineCommand('seckillTrimAcknowledged', { numberOfKeys: 1, lua: script('trim-acknowledged') });
    redis.defineCommand('seckillPause', { numberOfKeys: 1, lua: script('pause') });
    redis.defineCommand('seckillUnpause', { numberOfKeys: 1, lua: script('unpause') });
    // Variable key count (one release marker per cancelled, unreleased order): numberOfKeys per call.
    redis.defineCommand('seckillRepair', { lua: script('repair') });
    redis.defineCommand('seckillStreamStats', { numberOfKeys: 2, lua: script('stream-stats') });
  }

  shardOf(voucherId: string): number {
    return Number(BigInt(voucherId) % BigInt(this.shards));
  }

  keys(voucherId: string) {
    const tag = shardTag(this.shardOf(voucherId));
    return {
      voucher: `${tag}:voucher:${voucherId}`,
      buyers: `${tag}:buyers:${voucherId}`,
      ...this.shardKeys(this.shardOf(voucherId)),
    };
  }

  shardKeys(shard: number) {
    const tag = shardTag(shard);
    return { stream: `${tag}:orders`, deadLetters: `${tag}:orders:dead`, queued: `${tag}:queued`, tag };
  }

  /** Publishes stock and window unless the voucher is already in Redis; true if published now. */
  async publish(state: SeckillVoucherState): Promise<boolean> {
    const published = await this.redis.seckillPublish(
      this.keys(state.voucherId).voucher, state.stock, state.begin.getTime(), state.end.getTime(), SALE_KEYS_KEPT_AFTER_END_MS,
    );
    return published === 1;
  }

  async read(voucherId: string): Promise<SeckillVoucherState | null> {
    const fields = await this.redis.hgetall(this.keys(voucherId).voucher);
    if (fields.stock === undefined) return null;
    return { voucherId, stock: Number(fields.stock), begin: new Date(Number(fields.begin)), end: new Date(Number(fields.end)) };
  }

  /**
   * The atomic order check (reserve.lua): on `accepted` the order is on its way to MySQL (and,
   * with replica acknowledgement on, on as many replicas as asked, or counted as a timeout).
   */
  async reserve(order: QueuedOrder): Promise<ReserveOutcome> {
    if (this.replicaAck.acks > 0) return this.reserveAcknowledged(order);
    return toOutcome(await this.redis.seckillReserve(...this.reserveArgs(order)));
  }

  private reserveArgs(order: QueuedOrder) {
    const keys = this.keys(order.voucherId);
    return [
      keys.voucher, keys.buyers, keys.stream, keys.queued, order.userId, order.orderId, order.voucherId, SALE_KEYS_KEPT_AFTER_END_MS,
    ] as const;
  }

  /**
   * Group commit per shard: the orders that arrive while the shard's previous batch waits go
   * together as one pipeline `reserve.lua × n, WAIT acks timeout`. WAIT covers every earlier
   * write of its connection, so one WAIT confirms the whole batch. It must run on the connection
   * that ran the scripts: a lone keyless WAIT on an ioredis Cluster goes to a random node, but a
   * pipeline goes whole to the node of its keys' slot (all keys here share `{seckill:N}`), WAIT
   * included. One batch in flight per shard: a WAIT blocks its connection until the replicas
   * answer, and batching keeps that to one wait per batch instead of one per order. The batches
   * go over a duplicate of the client (its own connections to every node), so a WAIT never
   * holds up the instance's other commands (sessions, ids, ...) on the shared connection.
   */
  private reserveAcknowledged(order: QueuedOrder): Promise<ReserveOutcome> {
    const shard = this.shardOf(order.voucherId);
    return new Promise((resolve, reject) => {
      const queue = this.waiting.get(shard) ?? [];
      queue.push({ order, resolve, reject });
      this.waiting.set(shard, queue);
      if (!this.flushing.has(shard)) {
        this.flushing.add(shard);
        setImmediate(() => void this.flushShard(shard));
      }
    });
  }

  private async flushShard(shard: number): Promise<void> {
    for (;;) {
      const queue = this.waiting.get(shard) ?? [];
      const batch = queue.splice(0, MAX_ACK_BATCH);
      if (batch.length === 0) {
        this.flushing.delete(shard);
        return;
      }
      await this.reserveBatch(batch);
    }
  }

  private waitingClient(): RedisClient {
    if (!this.ackClient) {
      this.ackClient = this.redis.duplicate();
      this.ackClient.on('error', () => {}); // reported through the commands that fail
      this.ackClient.defineCommand('seckillReserve', { numberOfKeys: 4, lua: script('reserve') });
    }
    return this.ackClient;
  }

  /** Closes the connections of the replica acknowledgement (the shared client is closed by its owner). */
  async close(): Promise<void> {
    const client = this.ackClient;
    this.ackClient = undefined;
    if (client) await closeRedis(client);
  }

  private async reserveBatch(batch: PendingReserve[]): Promise<void> {
    const { acks, timeoutMs, onTimeout } = this.replicaAck;
    const client = this.waitingClient();
    const pipeline = client.pipeline();
    for (const { order } of batch) pipeline.seckillReserve(...this.reserveArgs(order));
    pipeline.wait(acks, timeoutMs);
    let replies: Array<[Error | null, unknown]>;
    try {
      replies = ((await pipeline.exec()) ?? []) as Array<[Error | null, unknown]>;
    } catch (error) {
      batch.forEach((pending) => pending.reject(error));
      return;
    }
    const [waitError, acknowledged] = replies[batch.length] ?? [new Error('no WAIT reply'), 0];
    let accepted = 0;
    let unconfirmed = 0;
    const results = await Promise.all(
      batch.map(async (pending, index): Promise<{ outcome: ReserveOutcome } | { error: unknown }> => {
        const [error, code] = replies[index] ?? [new Error('no reply'), null];
        try {
          if (error && REDIRECTED.test(error.message)) {
            // The slot moved (failover, resharding): run the script alone, which ioredis redirects;
            // its replication cannot be waited for on that path, so it counts as unconfirmed.
            if ('refreshSlotsCache' in client) client.refreshSlotsCache();
            const outcome = toOutcome(await client.seckillReserve(...this.reserveArgs(pending.order)));
            if (outcome === 'accepted') unconfirmed += 1;
            return { outcome };
          }
          if (error) throw error;
          const outcome = toOutcome(code as number);
          if (outcome === 'accepted') accepted += 1;
          return { outcome };
        } catch (failure) {
          return { error: failure };
        }
      }),
    );
    // Counted before anyone is answered, so a scrape right after an answer includes it.
    const confirmed = waitError ? -1 : Number(acknowledged);
    if (accepted > 0 && confirmed < acks) onTimeout?.(accepted, confirmed);
    if (unconfirmed > 0) onTimeout?.(unconfirmed, -1);
    results.forEach((result, index) => ('outcome' in result ? batch[index]!.resolve(result.outcome) : batch[index]!.reject(result.error)));
  }

  /** The release marker of an order (release.lua sets it when the order's unit is given back). */
  releaseMarker(order: Pick<QueuedOrder, 'orderId' | 'voucherId'>): string {
    return `${this.keys(order.voucherId).tag}:released:${order.orderId}`;
  }

  /** Gives an order's unit and buyer mark back, exactly once per order (release.lua). */
  async release(order: QueuedOrder): Promise<boolean> {
    const keys = this.keys(order.voucherId);
    const marker = this.releaseMarker(order);
    const released = await this.redis.seckillRelease(
      keys.voucher, keys.buyers, marker, keys.queued, order.userId, order.orderId, RELEASE_MARKER_TTL_SECONDS,
    );
    return released === 1;
  }

  /** Creates the shard's stream and its consumer group if missing; from id 0, not $: entries appended before the group existed are orders too. */
  async ensureGroup(shard: number): Promise<void> {
    await this.redis.seckillEnsureGroup(this.shardKeys(shard).stream, ORDER_GROUP);
  }

  /** Drops the shard's stream entries the group has acknowledged; returns how many. */
  async trimAcknowledged(shard: number): Promise<number> {
    return this.redis.seckillTrimAcknowledged(this.shardKeys(shard).stream, ORDER_GROUP);
  }

  /**
   * Per shard, for monitoring (one script call each, stream-stats.lua): stream length; the group's
   * pending entries (delivered, not acknowledged) and lag (not yet delivered; Redis 7 XINFO
   * GROUPS, null when Redis cannot tell); dead letters.
   */
  async streamStats(): Promise<Array<{ shard: number; length: number; pending: number; lag: number | null; deadLetters: number }>> {
    return Promise.all(
      Array.from({ length: this.shards }, async (_, shard) => {
        const { stream, deadLetters } = this.shardKeys(shard);
        const [length, pending, lag, dead] = await this.redis.seckillStreamStats(stream, deadLetters, ORDER_GROUP);
        return { shard, length, pending, lag: lag < 0 ? null : lag, deadLetters: dead };
      }),
    );
  }

  /** The order if it was accepted in Redis and is not yet confirmed in MySQL. */
  async findQueued(orderId: string): Promise<QueuedOrder | null> {
    // One HGET per shard; not a pipeline, which Redis Cluster refuses across slots.
    const shards = Array.from({ length: this.shards }, (_, shard) => shard);
    const values = await Promise.all(shards.map((shard) => this.redis.hget(this.shardKeys(shard).queued, orderId)));
    const value = values.find((found) => found !== null);
    if (value) {
      const [userId = '', voucherId = ''] = value.split(':');
      return { orderId, userId, voucherId };
    }
    return null;
  }
}

export const shardTag = (shard: number): string => `{seckill:${shard}}`;

function toOutcome(code: number): ReserveOutcome {
  const outcome = RESERVE_OUTCOMES[code];
  if (outcome === undefined) throw new Error(`reserve.lua returned unexpected ${code}`);
  return outcome;
}
