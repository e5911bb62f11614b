import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NearCache, NearCacheCounters, type RedisClient } from '../../../../src/lib/near-cache/index.js';
import { connectRedis, deleteKeys, uniquePrefix } from '../../../support/redis.js';
import { eventually } from '../../../support/eventually.js';

// Two near caches on the real Redis, as two app instances would have: what one writes, the other
// stops serving from memory as soon as Redis' invalidation arrives.
const prefix = uniquePrefix('near');
let writer: Redis;
const opened: NearCache[] = [];

const get = (redis: RedisClient, key: string) => redis.get(key);

async function nearCache(
  options: Partial<ConstructorParameters<typeof NearCache>[1]> = {},
): Promise<{ near: NearCache; stats: NearCacheCounters; redis: Redis }> {
  const redis = connectRedis(prefix);
  const stats = new NearCacheCounters();
  const near = new NearCache(redis, { maxEntries: 100, stats, ...options });
  opened.push(near);
  expect(await near.start()).toBe(true);
  redis.disconnect(); // the near cache has its own connections
  return { near, stats, redis };
}

/** Ms from the start of `write` until the first invalidation event after it (polled every millisecond). */
async function invalidationLatency(stats: NearCacheCounters, write: () => Promise<unknown>): Promise<number> {
  const before = stats.get('r', 'invalidation');
  const started = performance.now();
  await write();
  while (stats.get('r', 'invalidation') === before) {
    if (performance.now() - started > 1_000) throw new Error('no invalidation within 1 s');
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  return performance.now() - started;
}

beforeAll(() => {
  writer = connectRedis(prefix);
});

afterEach(async () => {
  await Promise.all(opened.splice(0).map((near) => near.close()));
});

afterAll(async () => {
  await deleteKeys(prefix);
  writer.disconnect();
});

describe('NearCache', () => {
  it('serves repeated reads from memory and drops the entry when another client writes the key (under 50 ms)', async () => {
    const a = await nearCache();
    const b = await nearCache();
    await writer.set('k1', 'v1');
    expect(await a.near.read('r', 'k1', get)).toBe('v1');
    expect(await a.near.read('r', 'k1', get)).toBe('v1');
    expect(a.stats.get('r', 'hit')).toBe(1);
    expect(a.stats.get('r', 'miss')).toBe(1);

    // Instance B writes through its own connection; A drops its entry within the invalidation
    // latency (the median of 10 writes, so one scheduling hiccup of a busy machine does not fail it).
    const latencies: number[] = [];
    for (let round = 0; round < 10; round++) {
      latencies.push(await invalidationLatency(a.stats, () => b.near.client.set('k1', `v${round}`)));
      expect(await a.near.read('r', 'k1', get)).toBe(`v${round}`);
    }
    latencies.sort((x, y) => x - y);
    console.info(`invalidation latency ms: median ${latencies[5]!.toFixed(2)}, max ${latencies[9]!.toFixed(2)}`);
    expect(latencies[5]).toBeLessThan(50);
  });

  it('caches missing keys too (null) until they are created', async () => {
    const a = await nearCache();
    expect(await a.near.read('r', 'absent', get)).toBeNull();
    expect(await a.near.read('r', 'absent', get)).toBeNull();
    expect(a.stats.get('r', 'hit')).toBe(1);
    await writer.set('absent', 'now');
    await eventually(async () => expect(await a.near.read('r', 'absent', get)).toBe('now'));
  });

  it('keeps what cacheIf accepts only', async () => {
    const a = await nearCache();
    await writer.set('tomb', '~inv:1');
    const read = () => a.near.read('r', 'tomb', get, { cacheIf: (value) => value !== null && !value.startsWith('~inv:') });
    await read();
    await read();
    expect(a.stats.get('r', 'hit')).toBe(0);
  });

  it('does not keep a value read while its key was invalidated (the write raced with the read)', async () => {
    const a = await nearCache();
    await writer.mset('race', 'old', 'race-probe', 'p');
    expect(await a.near.read('r', 'race-probe', get)).toBe('p'); // kept: its invalidation shows when the race key's has arrived
    // The fetch reads, then the key changes before the reply is handed back: the invalidation
    // arrives on the subscriber while the read is still in flight.
    const value = await a.near.read('r', 'race', async (redis, key) => {
      const read = await redis.get(key);
      const invalidations = a.stats.get('r', 'invalidation');
      // One command: Redis sends the race key's invalidation before the probe's, on the one
      // subscriber connection; once the probe is dropped, the race key's has been handled too
      // (waited for, not given a fixed 50 ms).
      await writer.mset('race', 'new', 'race-probe', 'q');
      await eventually(() => expect(a.stats.get('r', 'invalidation')).toBeGreaterThan(invalidations));
      return read;
    });
    expect(value).toBe('old');
    expect(await a.near.read('r', 'race', get)).toBe('new');
  });

  it('bounds its size (LRU) and ages entries out after ttlMs', async () => {
    const a = await nearCache({ maxEntries: 3, ttlMs: 200 });
    await writer.mset('l1', '1', 'l2', '2', 'l3', '3', 'l4', '4');
    for (const key of ['l1', 'l2', 'l3']) await a.near.read('r', key, get);
    await a.near.read('r', 'l1', get); // l1 becomes the most recently used
    await a.near.read('r', 'l4', get); // evicts l2
    expect(a.near.size).toBe(3);
    const missesBefore = a.stats.get('r', 'miss');
    await a.near.read('r', 'l1', get);
    await a.near.read('r', 'l2', get);
    expect(a.stats.get('r', 'miss') - missesBefore).toBe(1);

    await new Promise((resolve) => setTimeout(resolve, 250));
    const misses = a.stats.get('r', 'miss');
    await a.near.read('r', 'l1', get);
    expect(a.stats.get('r', 'miss')).toBe(misses + 1);

    // A shorter life per entry (e.g. the key's PTTL), and none at all for ttlMs <= 0.
    const short = { ttlMs: () => 30 };
    await a.near.read('r', 'l3', get, short);
    const hits = a.stats.get('r', 'hit');
    await a.near.read('r', 'l3', get, short);
    expect(a.stats.get('r', 'hit')).toBe(hits + 1);
    await new Promise((resolve) => setTimeout(resolve, 60)); // gone after its 30 ms
    const before = a.stats.get('r', 'miss');
    await a.near.read('r', 'l3', get, { ttlMs: () => 0 });
    await a.near.read('r', 'l3', get, { ttlMs: () => 0 });
    expect(a.stats.get('r', 'miss')).toBe(before + 2);
  });

  it('never serves a stale value after its invalidation connection is killed, and caches again once tracking is back', async () => {
    const a = await nearCache({ healthCheckMs: 0 });
    await writer.set('kill', 'before');
    expect(await a.near.read('r', 'kill', get)).toBe('before');
    const [id] = a.near.invalidationClientIds;
    expect(id).toBeDefined();
    await writer.client('KILL', 'ID', String(id));
    // Written while the subscriber is away: this invalidation is lost, so the cache must have been flushed.
    await writer.set('kill', 'after');
    await eventually(() => expect(a.stats.get('*', 'flush')).toBeGreaterThan(0));
    for (let i = 0; i < 20; i++) expect(await a.near.read('r', 'kill', get)).toBe('after');
    // Tracking comes back on a new subscriber (new id), and the cache works again.
    await eventually(() => expect(a.near.ready).toBe(true), 5_000);
    expect(a.near.invalidationClientIds[0]).not.toBe(id);
    await a.near.read('r', 'kill', get);
    const hits = a.stats.get('r', 'hit');
    expect(await a.near.read('r', 'kill', get)).toBe('after');
    expect(a.stats.get('r', 'hit')).toBe(hits + 1);
    await writer.set('kill', 'later');
    await eventually(async () => expect(await a.near.read('r', 'kill', get)).toBe('later'));
  });
});
