import { Cluster, type Redis } from 'ioredis';
import calculateSlot from 'cluster-key-slot';
import { LRUCache } from 'lru-cache';
import { NodeTracking, type TrackingListener } from './node-tracking.js';
import type { Fetch, KeyReader, NearCacheEvent, NearCacheStats, ReadOptions, RedisClient } from './types.js';

export interface NearCacheOptions {
  /** Most entries kept; the least recently used goes first. */
  maxEntries: number;
  /** Longest life of an entry in ms, on top of invalidation (a bound on any staleness Redis cannot signal); 0: none. Default 0. */
  ttlMs?: number;
  /** Receives hit/miss/invalidation/flush events. */
  stats?: NearCacheStats;
  /** Connection and tracking errors (they cost caching, never a read). Default: ignored. */
  onError?: (error: unknown, context: { what: string }) => void;
  /** How often each invalidation connection is PINGed; one silent for a period is reconnected (and the cache flushed). 0: never. Default 5 000. */
  healthCheckMs?: number;
}

interface Entry {
  value: unknown;
  region: string;
}

/** A read in progress whose key an invalidation may hit before its reply arrives. */
interface Flight {
  stale: boolean;
}

/**
 * An in-process cache in front of Redis kept coherent by Redis client-side caching (RESP2,
 * default tracking mode, per node on a Cluster): a read goes through a tracked connection of its
 * own, its value is kept, and Redis tells us when the key changes. See README.md.
 */
export class NearCache implements KeyReader {
  /** The tracked connection reads go through (a duplicate of the client given; closed by close()). */
  readonly client: RedisClient;
  private readonly entries: LRUCache<string, Entry>;
  private readonly flights = new Map<string, Set<Flight>>();
  private readonly nodes = new Map<string, NodeTracking>();
  private readonly prefix: string;
  private readonly ttlMs: number;
  /** Bumped by every flush: a read begun before one is not cached. */
  private epoch = 0;
  private slotSignature = '';
  private closed = false;
  private readonly listener: TrackingListener = {
    invalidate: (keys) => this.invalidate(keys),
    flush: (reason) => this.flush(reason),
    error: (error, what) => this.options.onError?.(error, { what }),
  };

  constructor(
    redis: RedisClient,
    private readonly options: NearCacheOptions,
  ) {
    const { maxEntries, ttlMs = 0, healthCheckMs = 5_000 } = options;
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new RangeError(`maxEntries must be a positive integer: ${maxEntries}`);
    if (!Number.isInteger(ttlMs) || ttlMs < 0) throw new RangeError(`ttlMs must be an integer >= 0: ${ttlMs}`);
    if (!Number.isInteger(healthCheckMs) || healthCheckMs < 0) throw new RangeError(`healthCheckMs must be an integer >= 0: ${healthCheckMs}`);
    this.ttlMs = ttlMs;
    this.entries = new LRUCache<string, Entry>({ max: maxEntries, ...(ttlMs > 0 ? { ttl: ttlMs } : {}) });
    this.prefix = (redis instanceof Cluster ? redis.options.keyPrefix : redis.options.keyPrefix) ?? '';
    this.client = redis instanceof Cluster ? this.trackCluster(redis) : this.trackStandalone(redis);
  }

  /** Resolves true once tracking is on for every node known now, false if not within `waitMs` (reads still work, uncached). */
  async start(waitMs = 5_000): Promise<boolean> {
    const deadline = Date.now() + waitMs;
    if (this.client.status === 'wait') await this.client.connect().catch(() => undefined);
    for (const node of this.nodes.values()) node.start();
    while (!this.ready) {
      if (Date.now() >= deadline || this.closed) return false;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return true;
  }

  /** True while every node known has tracking on. */
  get ready(): boolean {
    return this.nodes.size > 0 && [...this.nodes.values()].every((node) => node.tracking);
  }

  /** CLIENT IDs of the invalidation connections up now, one per node (for CLIENT LIST / CLIENT KILL: tools, tests). */
  get invalidationClientIds(): number[] {
    return [...this.nodes.values()].flatMap((node) => (node.subscriberId === null ? [] : [node.subscriberId]));
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * The value of `key` from memory, or from `fetch` through the tracked connection (then kept,
   * unless the key changed, a flush happened or tracking was off while it ran).
   */
  async read<T>(region: string, key: string, fetch: Fetch<T>, options?: ReadOptions<T>): Promise<T> {
    const fullKey = this.prefix + key;
    const entry = this.entries.get(fullKey);
    if (entry !== undefined) {
      this.record(region, 'hit');
      return entry.value as T;
    }
    this.record(region, 'miss');
    const node = this.nodeOf(fullKey);
    if (node === undefined || !node.tracking || this.closed) return fetch(this.client, key);
    const epoch = this.epoch;
    const flight: Flight = { stale: false };
    const flights = this.flights.get(fullKey) ?? new Set<Flight>();
    this.flights.set(fullKey, flights.add(flight));
    try {
      const value = await fetch(this.client, key);
      const unchanged = !flight.stale && epoch === this.epoch && node.tracking && this.nodeOf(fullKey) === node;
      if (unchanged && (options?.cacheIf?.(value) ?? true)) this.keep(fullKey, { value, region }, options?.ttlMs?.(value));
      return value;
    } finally {
      flights.delete(flight);
      if (flights.size === 0) this.flights.delete(fullKey);
    }
  }

  private keep(fullKey: string, entry: Entry, ttlMs: number | undefined): void {
    if (ttlMs === undefined) this.entries.set(fullKey, entry);
    else if (ttlMs > 0) this.entries.set(fullKey, entry, { ttl: Math.max(1, Math.floor(this.ttlMs > 0 ? Math.min(ttlMs, this.ttlMs) : ttlMs)) });
  }

  peek(key: string): unknown {
    return this.entries.get(this.prefix + key)?.value;
  }

  forget(key: string): void {
    this.invalidate([this.prefix + key]);
  }

  /** Drops everything kept (also what close() and every connection drop do). */
  clear(): void {
    this.flush('cleared');
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const node of this.nodes.values()) node.close();
    this.nodes.clear();
    this.entries.clear();
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }

  private invalidate(keys: readonly string[]): void {
    for (const key of keys) {
      const entry = this.entries.get(key, { allowStale: true, updateAgeOnGet: false });
      if (entry !== undefined) {
        this.entries.delete(key);
        this.record(entry.region, 'invalidation');
      }
      for (const flight of this.flights.get(key) ?? []) flight.stale = true;
    }
  }

  private flush(_reason: string): void {
    this.epoch++;
    if (this.entries.size > 0) this.record('*', 'flush');
    this.entries.clear();
  }

  private record(region: string, event: NearCacheEvent): void {
    this.options.stats?.record(region, event);
  }

  private nodeOf(fullKey: string): NodeTracking | undefined {
    if (!(this.client instanceof Cluster)) return this.nodes.values().next().value;
    const owner = this.client.slots[calculateSlot(fullKey)]?.[0];
    return owner === undefined ? undefined : this.nodes.get(owner);
  }

  private trackStandalone(redis: Redis): Redis {
    const data = redis.duplicate({ lazyConnect: true });
    const subscriber = redis.duplicate({ lazyConnect: true, keyPrefix: '', autoResubscribe: false, enableAutoPipelining: false });
    this.addNode('redis', data, subscriber);
    return data;
  }

  /**
   * A Cluster duplicate whose node connections each get a subscriber of their own on the same
   * node. A change of which node serves which slots (a failover, a resharding) flushes.
   */
  private trackCluster(cluster: Cluster): Cluster {
    const data = cluster.duplicate([], { lazyConnect: true });
    const add = (node: Redis): void => {
      const name = nodeName(node);
      if (this.nodes.has(name) || this.closed) return;
      const subscriber = node.duplicate({
        lazyConnect: true,
        keyPrefix: '',
        autoResubscribe: false,
        enableAutoPipelining: false,
        readOnly: false,
        retryStrategy: (times) => Math.min(times * 100, 2_000),
      });
      this.addNode(name, node, subscriber).start();
    };
    data.on('+node', add);
    data.on('-node', (node: Redis) => {
      const name = nodeName(node);
      this.nodes.get(name)?.close();
      this.nodes.delete(name);
    });
    data.on('refresh', () => this.checkSlots(data));
    return data;
  }

  private addNode(name: string, data: Redis, subscriber: Redis): NodeTracking {
    const node = new NodeTracking(name, data, subscriber, this.listener, this.options.healthCheckMs ?? 5_000);
    this.nodes.set(name, node);
    return node;
  }

  /** Flushes when the masters of the slots changed since the last refresh. */
  private checkSlots(cluster: Cluster): void {
    const owners: string[] = [];
    let previous: string | undefined;
    cluster.slots.forEach((nodes, slot) => {
      if (nodes[0] !== previous) owners.push(`${slot}=${nodes[0] ?? ''}`);
      previous = nodes[0];
    });
    const signature = owners.join(',');
    if (this.slotSignature !== '' && signature !== this.slotSignature) this.flush('slots moved');
    this.slotSignature = signature;
  }
}

/** `host:port`, as ioredis names a node in `Cluster.slots`. */
const nodeName = (node: Redis): string => `${node.options.host ?? ''}:${node.options.port ?? ''}`;

/** The near cache turned off: every read fetches from Redis through the client given. */
export class PassThroughReader implements KeyReader {
  constructor(private readonly redis: RedisClient) {}

  read<T>(_region: string, key: string, fetch: Fetch<T>): Promise<T> {
    return fetch(this.redis, key);
  }

  peek(): undefined {
    return undefined;
  }

  forget(): void {}
}
