import { closeRedis, commandTimeoutOf, duplicateRedis, type RedisClient } from '../../../infra/redis.js';
import type { SaleKeys } from '../keys.js';
import { defineSaleScripts, type SaleScripts } from './sale-scripts.js';
import type { OrderRequest, ReserveResult } from '../types.js';

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
  order: OrderRequest;
  resolve: (result: ReserveResult) => void;
  reject: (error: unknown) => void;
}

/** Most orders per group commit (one pipeline of scripts + one WAIT). */
const MAX_ACK_BATCH = 256;

/** Redis Cluster redirections and transient hash slot states: the pipeline reached a node that does not (or not yet) serve the hash slot. */
const REDIRECTED = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN)\b/;

/**
 * Group commit per shard: the orders that arrive while the shard's previous batch waits go
 * together as one pipeline `reserve.lua × n, WAIT acks timeout`. WAIT covers every earlier
 * write of its connection, so one WAIT confirms the whole batch. It must run on the connection
 * that ran the scripts: a lone keyless WAIT on an ioredis Cluster goes to a random node, but a
 * pipeline goes whole to the node of its keys' hash slot (all keys here share `{seckill:N}`), WAIT
 * included. One batch in flight per shard: a WAIT blocks its connection until the replicas
 * answer, and batching keeps that to one wait per batch instead of one per order. The batches
 * go over a duplicate of the client (its own connections to every node), so a WAIT never
 * holds up the instance's other commands (sessions, ids, ...) on the shared connection.
 */
export class AcknowledgedReserve {
  private readonly waiting = new Map<number, PendingReserve[]>();
  private readonly flushing = new Set<number>();
  /** Connections of their own, created on first use. */
  private client: { redis: RedisClient; scripts: SaleScripts } | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: SaleKeys,
    private readonly options: ReplicaAckOptions,
  ) {}

  reserve(order: OrderRequest): Promise<ReserveResult> {
    const shard = this.keys.shardOf(order.voucherId);
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

  /** Closes the connections of its own (the shared client is closed by its owner). */
  async close(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) await closeRedis(client.redis);
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

  private connection(): { redis: RedisClient; scripts: SaleScripts } {
    if (!this.client) {
      // WAIT may take its whole timeout on top of the usual command bound.
      const bound = commandTimeoutOf(this.redis);
      const redis = bound === undefined ? this.redis.duplicate() : duplicateRedis(this.redis, bound + this.options.timeoutMs);
      redis.on('error', () => {}); // reported through the commands that fail
      this.client = { redis, scripts: defineSaleScripts(redis, this.keys) };
    }
    return this.client;
  }

  private async reserveBatch(batch: PendingReserve[]): Promise<void> {
    const { acks, timeoutMs, onTimeout } = this.options;
    const { redis, scripts } = this.connection();
    const pipeline = redis.pipeline();
    for (const { order } of batch) scripts.reserve.queue(pipeline, { order, mode: 'stream' });
    pipeline.wait(acks, timeoutMs);
    let replies: Array<[Error | null, unknown]>;
    try {
      replies = (await pipeline.exec()) ?? [];
    } catch (error) {
      batch.forEach((pending) => pending.reject(error));
      return;
    }
    const [waitError, acknowledged] = replies[batch.length] ?? [new Error('no WAIT reply'), 0];
    let accepted = 0;
    let unconfirmed = 0;
    const results = await Promise.all(
      batch.map(async (pending, index): Promise<{ result: ReserveResult } | { error: unknown }> => {
        const [error, code] = replies[index] ?? [new Error('no reply'), null];
        try {
          if (error && REDIRECTED.test(error.message)) {
            // The hash slot moved (failover, resharding): run the script alone, which ioredis redirects;
            // its replication cannot be waited for on that path, so it counts as unconfirmed.
            if ('refreshSlotsCache' in redis) redis.refreshSlotsCache();
            const result = await scripts.reserve({ order: pending.order, mode: 'stream' });
            if (result.outcome === 'accepted') unconfirmed += 1;
            return { result };
          }
          if (error) throw error;
          const result = scripts.reserve.reply(code);
          if (result.outcome === 'accepted') accepted += 1;
          return { result };
        } catch (failure) {
          return { error: failure };
        }
      }),
    );
    // Counted before anyone is answered, so a scrape right after an answer includes it.
    const confirmed = waitError ? -1 : Number(acknowledged);
    if (accepted > 0 && confirmed < acks) onTimeout?.(accepted, confirmed);
    if (unconfirmed > 0) onTimeout?.(unconfirmed, -1);
    results.forEach((answer, index) => ('result' in answer ? batch[index]!.resolve(answer.result) : batch[index]!.reject(answer.error)));
  }
}
