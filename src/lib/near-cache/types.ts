import type { Cluster, Redis } from 'ioredis';

/** A standalone Redis or a Redis Cluster (ioredis). */
export type RedisClient = Redis | Cluster;

/**
 * What happened in a near cache, for counters:
 * - `hit`: a read answered from process memory, no Redis round trip;
 * - `miss`: a read that went to Redis (absent, expired by the local TTL, or tracking not on);
 * - `invalidation`: an entry dropped because Redis said its key changed;
 * - `flush`: every entry dropped at once (an invalidation connection dropped or reconnected, a
 *   node failed over, a FLUSHALL); counted under the region `*`.
 */
export type NearCacheEvent = 'hit' | 'miss' | 'invalidation' | 'flush';

export const NEAR_CACHE_EVENTS: readonly NearCacheEvent[] = ['hit', 'miss', 'invalidation', 'flush'];

/** Receives every event; wire it to Prometheus, logs or a test. Errors it throws are not caught. */
export interface NearCacheStats {
  record(region: string, event: NearCacheEvent): void;
}

/**
 * Reads one Redis key through the connection it is given. That connection is the tracked one:
 * read only `key` with it (any read command: GET, HGETALL, a pipeline of reads of `key`).
 */
export type Fetch<T> = (redis: RedisClient, key: string) => Promise<T>;

export interface ReadOptions<T> {
  /** Whether this value may be kept in memory (e.g. not a tombstone or a transient miss). Default: all. */
  cacheIf?: (value: T) => boolean;
  /**
   * How long this value may be kept, in ms (e.g. the key's PTTL, read along with it: Redis sends
   * the invalidation of an expired key only when it deletes the key, which may be much later);
   * undefined: the cache's ttlMs; 0 or less: not kept.
   */
  ttlMs?: (value: T) => number | undefined;
}

/**
 * What callers use: a NearCache, or a PassThrough (near cache turned off) that always fetches.
 * `key` is the Redis key without the client's key prefix, as given to ioredis commands.
 */
export interface KeyReader {
  read<T>(region: string, key: string, fetch: Fetch<T>, options?: ReadOptions<T>): Promise<T>;
  /**
   * The value kept in memory for `key` now, or undefined: never a Redis command. A value kept is
   * current up to the invalidations this process has received, so a caller can act on it without
   * asking Redis (a PassThrough keeps nothing: always undefined).
   */
  peek(key: string): unknown;
  /**
   * Drops `key` here at once (and keeps a read of it in flight from being kept). Call it after
   * this process wrote the key: Redis' invalidation reaches every instance, this one included,
   * only a moment later, and this process must read its own writes.
   */
  forget(key: string): void;
}

/** In-memory counters: a NearCacheStats for tests and tools. */
export class NearCacheCounters implements NearCacheStats {
  private readonly counts = new Map<string, number>();

  record(region: string, event: NearCacheEvent): void {
    const key = `${region}\u0000${event}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  get(region: string, event: NearCacheEvent): number {
    return this.counts.get(`${region}\u0000${event}`) ?? 0;
  }

  reset(): void {
    this.counts.clear();
  }
}
