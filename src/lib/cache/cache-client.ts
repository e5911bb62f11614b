import type { LockClient } from '../lock/index.js';
import { decode, encodeValue, fingerprint, newTombstone, NULL_MARKER, type Entry } from './codec.js';
import { defineCacheScripts, type CacheScripts } from './scripts.js';
import { SingleFlight } from './single-flight.js';
import type { CacheEvent, CacheStats, KeyReader, KeyReadOptions, RedisClient } from './types.js';

/**
 * How a missing or expired hot key is rebuilt without a stampede on the loader (breakdown):
 * - `mutex`: values carry a real TTL; on a miss one caller per key across all instances loads
 *   (single-flight in the process + a distributed lock), the others wait for it and re-read;
 * - `logical`: values carry no TTL but an `expireAt`; an expired value is served at once while one
 *   instance reloads it in the background. A key that is not there at all (never warmed, evicted,
 *   invalidated) is loaded like `mutex`, never reported missing.
 */
export type CacheStrategy = 'mutex' | 'logical';

/** Anything that can rule ids out before a load: a BloomFilter. */
export interface IdFilter {
  /** False only when the id certainly does not exist. */
  mightContain(id: string): Promise<boolean>;
}

export interface CacheDefinition<V> {
  /** Names the cache in stats and its locks (`lock:{<name>:<id>}`); no braces. */
  name: string;
  /** The Redis key of an id, e.g. `(id) => \`cache:shop:${id}\``. */
  key: (id: string) => string;
  /**
   * Reads the source (the database). null/undefined: the id does not exist (cached as the null
   * marker). The value must survive JSON: what get() returns is the JSON round trip of it.
   */
  load: (id: string) => Promise<V | null | undefined>;
  /** Time to live of a value: the Redis TTL (`mutex`) or the logical expiry (`logical`). */
  ttlMs: number;
  /** Default `mutex`. */
  strategy?: CacheStrategy;
  /**
   * Avalanche protection: each write adds a random 0..jitterPercent % to ttlMs, so keys written
   * together do not expire together. Default 10.
   */
  jitterPercent?: number;
  /** Penetration protection: TTL of the null marker of a missing id; 0 disables it. Default 60 000. */
  nullTtlMs?: number;
  /** Checked on a miss before any load: ids it rules out are answered null without a load. */
  filter?: IdFilter;
  /**
   * How long a caller waits for another instance's rebuild of the same key (sleeping on the lock's
   * release notification, not polling) before it loads by itself. Default 2 000.
   */
  waitMs?: number;
  /** Fixed lease of the rebuild lock; default: the LockClient's default lease, renewed by its watchdog. */
  lockLeaseMs?: number;
  /**
   * Life of the tombstone invalidate() leaves. A rebuild that read the source before the write it
   * invalidates cannot store its old value while the tombstone lives: keep it above the slowest
   * load. Default 30 000.
   */
  tombstoneMs?: number;
}

export interface CacheClientOptions {
  /** Rebuild locks (one LockClient per process and Redis; not closed by the cache client). */
  locks: LockClient;
  /** Receives hit/miss/... events of every cache. */
  stats?: CacheStats;
  /** Errors of background rebuilds, which have no caller to throw to. Default: ignored. */
  onError?: (error: unknown, context: { cache: string; id: string }) => void;
  /**
   * Reads the key of every get() (a near cache in front of Redis); default: one GET on the client.
   * Values, null markers and logically expired values may be kept by it; misses and tombstones are
   * not. invalidate() and set() tell it to forget the key.
   */
  reader?: KeyReader;
  /**
   * Announces every write of a key (invalidate, set, a rebuild's store) as `PUBLISH <channel> <key>`,
   * the key as `key(id)` gives it (without the client's keyPrefix), to caches outside this process
   * that keep what they read (the edge's L1, edge/README.md). Default: none.
   */
  changeChannel?: string;
}

/**
 * Typed cache-aside over Redis for any loader: JSON values with TTL jitter, null markers and an
 * optional id filter against penetration, mutex or logical-expiry rebuilds against breakdown,
 * compare-and-set stores so invalidations are never undone by a slow rebuild.
 */
export class CacheClient {
  private readonly scripts: CacheScripts;
  private readonly caches: Array<Cache<unknown>> = [];

  constructor(
    private readonly redis: RedisClient,
    private readonly options: CacheClientOptions,
  ) {
    this.scripts = defineCacheScripts(redis);
  }

  define<V>(definition: CacheDefinition<V>): Cache<V> {
    const cache = new Cache<V>(this.redis, this.scripts, this.options, definition);
    this.caches.push(cache);
    return cache;
  }

  /**
   * invalidate() of a key by its name, for a process that knows the keys but not their loaders (a
   * change follower, a sweep after a gap): the same tombstone (`tombstoneMs`, default 30 000) and
   * the same announcement. `key` is written without the client's keyPrefix, as `key(id)` gives it.
   */
  async invalidateKey(key: string, tombstoneMs = DEFAULT_TOMBSTONE_MS): Promise<void> {
    assertMs('tombstoneMs', tombstoneMs, 1);
    await writeTombstone(this.redis, this.options, key, tombstoneMs);
  }

  /** Resolves once the background rebuilds running now have finished (call before closing Redis). */
  async idle(): Promise<void> {
    await Promise.all(this.caches.map((cache) => cache.idle()));
  }
}

const DEFAULT_TOMBSTONE_MS = 30_000;

/** The tombstone of an invalidation, the near cache told, the change announced (changeChannel). */
async function writeTombstone(redis: RedisClient, options: CacheClientOptions, key: string, tombstoneMs: number): Promise<void> {
  await redis.set(key, newTombstone(), 'PX', tombstoneMs);
  options.reader?.forget(key);
  if (options.changeChannel !== undefined) await redis.publish(options.changeChannel, key);
}

/** One cache: a key space, a loader and a strategy. Made by CacheClient.define. */
export class Cache<V> {
  readonly name: string;
  readonly strategy: CacheStrategy;
  private readonly ttlMs: number;
  private readonly jitterPercent: number;
  private readonly nullTtlMs: number;
  private readonly waitMs: number;
  private readonly tombstoneMs: number;
  /** Cold loads running in this process, by key. */
  private readonly loads = new SingleFlight<V | null>();
  /** Background (logical-expiry) rebuilds running in this process, by key. */
  private readonly refreshes = new SingleFlight<void>();

  constructor(
    private readonly redis: RedisClient,
    private readonly scripts: CacheScripts,
    private readonly client: CacheClientOptions,
    private readonly definition: CacheDefinition<V>,
  ) {
    const { name, ttlMs, strategy = 'mutex', jitterPercent = 10, nullTtlMs = 60_000, waitMs = 2_000, tombstoneMs = DEFAULT_TOMBSTONE_MS } = definition;
    if (name.length === 0 || /[{}]/.test(name)) throw new TypeError(`Invalid cache name (empty or with braces): ${JSON.stringify(name)}`);
    assertMs('ttlMs', ttlMs, 1);
    assertMs('nullTtlMs', nullTtlMs, 0);
    assertMs('waitMs', waitMs, 0);
    assertMs('tombstoneMs', tombstoneMs, 1);
    if (definition.lockLeaseMs !== undefined) assertMs('lockLeaseMs', definition.lockLeaseMs, 1);
    if (!(jitterPercent >= 0 && jitterPercent <= 100)) throw new RangeError(`jitterPercent must be in [0, 100]: ${jitterPercent}`);
    if (strategy !== 'mutex' && strategy !== 'logical') throw new RangeError(`unknown cache strategy: ${String(strategy)}`);
    this.name = name;
    this.strategy = strategy;
    this.ttlMs = ttlMs;
    this.jitterPercent = jitterPercent;
    this.nullTtlMs = nullTtlMs;
    this.waitMs = waitMs;
    this.tombstoneMs = tombstoneMs;
  }

  key(id: string): string {
    return this.definition.key(id);
  }

  /** The value of an id, or null when it does not exist. One GET on a hit. */
  async get(id: string): Promise<V | null> {
    const key = this.key(id);
    const entry = await this.read(key);
    if (entry.kind === 'null') {
      this.record('null_hit');
      return null;
    }
    if (entry.kind === 'value') {
      if (isFresh(entry)) {
        this.record('hit');
        return entry.data;
      }
      if (this.strategy === 'logical') {
        this.record('stale');
        this.refreshInBackground(id, key);
        return entry.data;
      }
      // A logically expired entry (left by a logical-strategy instance) is a miss for `mutex`.
    }
    this.record('miss');
    if (this.definition.filter && !(await this.definition.filter.mightContain(id))) {
      this.record('bloom_reject');
      return null;
    }
    return this.loads.run(key, () => this.loadUnderLock(id, key));
  }

  /**
   * Call after the source changed (after the commit). Later reads load again: in this process at
   * once (running loads are left to their callers), and everywhere through a tombstone that also
   * stops rebuilds which read the source before the change from storing their old value.
   */
  async invalidate(id: string): Promise<void> {
    const key = this.key(id);
    this.loads.forget(key);
    await writeTombstone(this.redis, this.client, key, this.tombstoneMs);
  }

  /** Stores a value unconditionally (pre-warming hot keys, write-through). */
  async set(id: string, value: V): Promise<void> {
    const key = this.key(id);
    this.loads.forget(key);
    const { encoded, ttlMs } = this.encode(value);
    if (ttlMs > 0) await this.redis.set(key, encoded, 'PX', ttlMs);
    else await this.redis.set(key, encoded);
    this.client.reader?.forget(key);
    await this.announce(key);
  }

  /** Resolves once this process' background rebuilds running now have finished. */
  async idle(): Promise<void> {
    while (this.refreshes.size > 0) await Promise.allSettled(this.refreshes.running());
  }

  /**
   * The entry of a key: one GET, or through the reader (a near cache), which may keep what it
   * read for as long as the key's Redis TTL (PTTL, read along with it) still runs.
   */
  private async read(key: string): Promise<Entry<V>> {
    const reader = this.client.reader;
    if (reader === undefined) return decode<V>(await this.redis.get(key));
    const read = await reader.read<EntryRead<V>>(this.name, key, fetchEntry, NEAR_READ_OPTIONS);
    return read.entry;
  }

  /**
   * Mutex rebuild: the lock holder double-checks Redis, loads and stores; the others sleep on
   * the lock's release notification (bounded by waitMs), then find the value on their re-read.
   */
  private async loadUnderLock(id: string, key: string): Promise<V | null> {
    const lock = this.client.locks.simpleLock(this.lockName(id));
    const handle = await lock.tryLock({ waitMs: this.waitMs, ...(this.definition.lockLeaseMs ? { leaseMs: this.definition.lockLeaseMs } : {}) });
    if (handle === null) {
      // The holder is slow or gone: one more look, then load without it (bounded wait, not forever).
      this.record('lock_timeout');
      const raw = await this.redis.get(key);
      const usable = this.usable(decode<V>(raw));
      return usable ? usable.value : this.loadAndStore(id, key, raw);
    }
    try {
      const raw = await this.redis.get(key);
      const usable = this.usable(decode<V>(raw));
      return usable ? usable.value : await this.loadAndStore(id, key, raw);
    } finally {
      await handle.release().catch((error: unknown) => this.client.onError?.(error, { cache: this.name, id }));
    }
  }

  /** Logical expiry: at most one rebuild per key across instances (tryLock, no wait); stale served meanwhile. */
  private refreshInBackground(id: string, key: string): void {
    if (this.loads.has(key) || this.refreshes.has(key)) return;
    this.refreshes
      .run(key, async () => {
        const handle = await this.client.locks.simpleLock(this.lockName(id)).tryLock({
          waitMs: 0,
          ...(this.definition.lockLeaseMs ? { leaseMs: this.definition.lockLeaseMs } : {}),
        });
        if (handle === null) return; // another instance is rebuilding it
        try {
          const raw = await this.redis.get(key);
          const entry = decode<V>(raw);
          // Refreshed meanwhile by the previous holder, or now known missing: nothing to do.
          if (entry.kind === 'null' || (entry.kind === 'value' && isFresh(entry))) return;
          await this.loadAndStore(id, key, raw);
        } finally {
          await handle.release().catch(() => undefined);
        }
      })
      .catch((error: unknown) => this.client.onError?.(error, { cache: this.name, id }));
  }

  /** Calls the loader and stores the result, unless the key changed since `raw` was read. */
  private async loadAndStore(id: string, key: string, raw: string | null): Promise<V | null> {
    this.record('rebuild');
    try {
      const loaded = await this.definition.load(id);
      const expected = fingerprint(raw);
      if (loaded === null || loaded === undefined) {
        if (this.nullTtlMs > 0 && (await this.scripts.compareAndSet(key, expected, NULL_MARKER, this.nullTtlMs)) === 1) this.announceLater(id, key);
        return null;
      }
      const { encoded, ttlMs } = this.encode(loaded);
      if ((await this.scripts.compareAndSet(key, expected, encoded, ttlMs)) === 1) this.announceLater(id, key);
      // What a hit would return: the JSON round trip (dates become strings, undefined fields go).
      return (decode<V>(encoded) as { data: V }).data;
    } catch (error) {
      this.record('rebuild_error');
      throw error;
    }
  }

  /** PUBLISHes the key's change (changeChannel); a failure is the writer's, as the write's would be. */
  private async announce(key: string): Promise<void> {
    if (this.client.changeChannel !== undefined) await this.redis.publish(this.client.changeChannel, key);
  }

  /** After a rebuild's store: its readers do not wait for the announcement, a failure goes to onError. */
  private announceLater(id: string, key: string): void {
    if (this.client.changeChannel === undefined) return;
    this.announce(key).catch((error: unknown) => this.client.onError?.(error, { cache: this.name, id }));
  }

  /** A stored answer a caller may use: a fresh value, any value under `logical`, or the null marker. */
  private usable(entry: Entry<V>): { value: V | null } | undefined {
    if (entry.kind === 'null') return { value: null };
    if (entry.kind === 'value' && (this.strategy === 'logical' || isFresh(entry))) return { value: entry.data };
    return undefined;
  }

  private encode(value: V): { encoded: string; ttlMs: number } {
    const ttlMs = this.ttlMs + Math.floor(Math.random() * this.ttlMs * (this.jitterPercent / 100));
    return this.strategy === 'logical' ? { encoded: encodeValue(value, Date.now() + ttlMs), ttlMs: 0 } : { encoded: encodeValue(value), ttlMs };
  }

  /** `<name>:<id>`, braces escaped: they would move the lock's Cluster hash tag. */
  private lockName(id: string): string {
    return `${this.name}:${id.replace(/[{}%]/g, (char) => `%${char.charCodeAt(0).toString(16)}`)}`;
  }

  private record(event: CacheEvent): void {
    this.client.stats?.record(this.name, event);
  }
}

interface EntryRead<V> {
  entry: Entry<V>;
  pttl: number;
}

/** A key's entry and PTTL, read through the near cache's tracked connection (module-level: no closure per read). */
async function fetchEntry<V>(redis: RedisClient, tracked: string): Promise<EntryRead<V>> {
  const [raw, pttl] = await Promise.all([redis.get(tracked), redis.pttl(tracked)]);
  return { entry: decode<V>(raw), pttl };
}

/** Kept: values and null markers, as long as the key's Redis TTL runs; never a miss or a tombstone. */
const NEAR_READ_OPTIONS: KeyReadOptions<EntryRead<unknown>> = {
  cacheIf: ({ entry }) => entry.kind !== 'absent',
  ttlMs: ({ pttl }) => (pttl === -1 ? undefined : pttl),
};

const isFresh = (entry: { expireAt?: number }): boolean => entry.expireAt === undefined || entry.expireAt > Date.now();

function assertMs(what: string, value: number, min: number): void {
  if (!Number.isInteger(value) || value < min || value > 2 ** 31 - 1) throw new RangeError(`${what} must be an integer number of ms >= ${min}: ${value}`);
}
