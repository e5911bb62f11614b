import type { Cluster, Redis } from 'ioredis';

/** A standalone Redis or a Redis Cluster (ioredis). */
export type RedisClient = Redis | Cluster;

/**
 * What happened to one read (or one load) of a cache, for counters:
 * - `hit`: a fresh value came from Redis;
 * - `null_hit`: the null marker of an id known to be missing came from Redis;
 * - `stale`: a logically expired value was served while (at most) one instance rebuilds it;
 * - `miss`: Redis had nothing usable for the read;
 * - `bloom_reject`: a miss the Bloom filter answered (the id is certainly unknown): no load;
 * - `rebuild`: one call of the loader (the database), whatever the strategy;
 * - `rebuild_error`: a rebuild whose loader or store failed (foreground: thrown to its callers;
 *   background: passed to `onError`);
 * - `lock_timeout`: a mutex waiter gave up waiting for the rebuilding holder and loaded itself.
 */
export type CacheEvent = 'hit' | 'null_hit' | 'stale' | 'miss' | 'bloom_reject' | 'rebuild' | 'rebuild_error' | 'lock_timeout';

export const CACHE_EVENTS: readonly CacheEvent[] = ['hit', 'null_hit', 'stale', 'miss', 'bloom_reject', 'rebuild', 'rebuild_error', 'lock_timeout'];

/** Receives every event of every cache of a client; wire it to Prometheus, logs or a test. */
export interface CacheStats {
  record(cache: string, event: CacheEvent): void;
}

/** In-memory counters: a CacheStats for tests, or for exposing numbers without a metrics library. */
export class CacheCounters implements CacheStats {
  private readonly counts = new Map<string, number>();

  record(cache: string, event: CacheEvent): void {
    const key = `${cache}\u0000${event}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  get(cache: string, event: CacheEvent): number {
    return this.counts.get(`${cache}\u0000${event}`) ?? 0;
  }

  /** Every event of one cache, zeros included. */
  snapshot(cache: string): Record<CacheEvent, number> {
    return Object.fromEntries(CACHE_EVENTS.map((event) => [event, this.get(cache, event)])) as Record<CacheEvent, number>;
  }

  reset(): void {
    this.counts.clear();
  }
}

/** Several sinks as one (e.g. Prometheus and in-memory counters). */
export function combineStats(...sinks: Array<CacheStats | undefined>): CacheStats {
  const present = sinks.filter((sink): sink is CacheStats => sink !== undefined);
  return { record: (cache, event) => present.forEach((sink) => sink.record(cache, event)) };
}

/** What a KeyReader may keep of a read, and for how long (src/lib/near-cache's ReadOptions). */
export interface KeyReadOptions<T> {
  cacheIf?: (value: T) => boolean;
  ttlMs?: (value: T) => number | undefined;
}

/**
 * Where `get` reads a cache key from, instead of one GET on the client: e.g. a near cache
 * (src/lib/near-cache's KeyReader) that keeps entries in process memory while Redis' client
 * tracking says they are unchanged. `fetch` must read through the connection it is given.
 */
export interface KeyReader {
  read<T>(region: string, key: string, fetch: (redis: RedisClient, key: string) => Promise<T>, options?: KeyReadOptions<T>): Promise<T>;
  /** Called after this process wrote the key (invalidate, set): it must not serve the old value. */
  forget(key: string): void;
}
