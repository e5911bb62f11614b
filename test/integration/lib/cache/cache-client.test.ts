import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BloomFilter, CacheClient, type Cache, type CacheDefinition } from '../../../../src/lib/cache/index.js';
import { connectRedis, deleteKeys, uniquePrefix } from '../../../support/redis.js';
import { concurrently, Source, startInstances, stopInstances, total, type Instance } from './support.js';

interface Shop {
  id: string;
  name: string;
  opened?: string | Date;
}

const prefix = uniquePrefix('cache');
let instances: Instance[];
let caseNo = 0;

beforeAll(() => {
  instances = startInstances(prefix, 5);
});

afterAll(async () => {
  await stopInstances(instances);
  await deleteKeys(prefix);
});

/** The same cache definition on every instance, with a name of its own per test. */
function defineEverywhere(source: Source<Shop>, options: Partial<CacheDefinition<Shop>> = {}) {
  caseNo += 1;
  const name = `shop${caseNo}`;
  const caches = instances.map((instance) =>
    instance.caches.define<Shop>({ name, key: (id) => `cache:${name}:${id}`, load: source.load, ttlMs: 60_000, ...options }),
  );
  return { name, caches, first: caches[0]!, key: (id: string) => `cache:${name}:${id}` };
}

const redis = () => instances[0]!.redis;

describe('cache-aside read', () => {
  it('loads on a miss, stores JSON with a jittered TTL, then hits without loading', async () => {
    const source = new Source<Shop>();
    source.rows.set('1', { id: '1', name: '103茶餐厅', opened: new Date('2020-01-02T03:04:05Z') });
    const { name, first, key } = defineEverywhere(source, { ttlMs: 10_000, jitterPercent: 20 });

    // What a hit returns is the JSON round trip, so the first caller sees the same as later ones.
    expect(await first.get('1')).toEqual({ id: '1', name: '103茶餐厅', opened: '2020-01-02T03:04:05.000Z' });
    expect(await first.get('1')).toEqual({ id: '1', name: '103茶餐厅', opened: '2020-01-02T03:04:05.000Z' });
    expect(source.loads).toBe(1);
    expect(JSON.parse((await redis().get(key('1')))!)).toEqual({ data: { id: '1', name: '103茶餐厅', opened: '2020-01-02T03:04:05.000Z' } });
    const pttl = await redis().pttl(key('1'));
    expect(pttl).toBeGreaterThan(9_000);
    expect(pttl).toBeLessThanOrEqual(12_000);
    expect(instances[0]!.stats.snapshot(name)).toMatchObject({ miss: 1, rebuild: 1, hit: 1 });
  });

  it('spreads expiry times: TTL jitter within [ttl, ttl × (1 + jitter)]', async () => {
    const source = new Source<Shop>();
    for (let i = 1; i <= 40; i += 1) source.rows.set(String(i), { id: String(i), name: `s${i}` });
    const { first, key } = defineEverywhere(source, { ttlMs: 100_000, jitterPercent: 50 });
    await Promise.all([...source.rows.keys()].map((id) => first.get(id)));
    const ttls = await Promise.all([...source.rows.keys()].map((id) => redis().pttl(key(id))));
    expect(Math.min(...ttls)).toBeGreaterThan(98_000);
    expect(Math.max(...ttls)).toBeLessThanOrEqual(150_000);
    // 40 uniform draws over 50 s: all within 5 s of each other is practically impossible.
    expect(Math.max(...ttls) - Math.min(...ttls)).toBeGreaterThan(5_000);
  });
});

describe('penetration', () => {
  it('100 requests for a missing id load once per null-marker window', async () => {
    const source = new Source<Shop>();
    source.delayMs = 20;
    const { name, caches, key } = defineEverywhere(source, { nullTtlMs: 1_000 });

    const first = await concurrently(caches, 100, (i) => caches[i]!.get('404'));
    expect(first.every((value) => value === null)).toBe(true);
    expect(source.loads).toBe(1);
    expect(await redis().get(key('404'))).toBe(''); // hmdp's null marker
    expect(await redis().pttl(key('404'))).toBeLessThanOrEqual(1_000);

    await concurrently(caches, 100, (i) => caches[i]!.get('404'));
    expect(source.loads).toBe(1);
    expect(total(instances, name, 'null_hit')).toBe(100);

    await sleep(1_100); // the marker expired: the next window costs exactly one more load
    await concurrently(caches, 100, (i) => caches[i]!.get('404'));
    expect(source.loads).toBe(2);
  });

  it('a Bloom filter rejects unknown ids without a load or a null marker and passes every real one', async () => {
    const source = new Source<Shop>();
    const ids = Array.from({ length: 300 }, (_, i) => String(1000 + i));
    ids.forEach((id) => source.rows.set(id, { id, name: `shop ${id}` }));
    const bloom = new BloomFilter(redis(), { name: `filter${caseNo}`, expectedItems: 1000, falsePositiveRate: 0.001, locks: instances[0]!.locks });
    await bloom.rebuild(async function* () {
      yield ids;
    });
    const { name, first, key } = defineEverywhere(source, { filter: bloom });

    const unknown = Array.from({ length: 200 }, (_, i) => String(5_000_000 + i));
    expect((await Promise.all(unknown.map((id) => first.get(id)))).every((value) => value === null)).toBe(true);
    const rejected = instances[0]!.stats.get(name, 'bloom_reject');
    // p = 0.1 %: hardly any false positive among 200, and those are answered by a load + null marker.
    expect(rejected).toBeGreaterThanOrEqual(197);
    expect(source.loads).toBe(200 - rejected);
    expect(await redis().exists(key(unknown[0]!))).toBe(source.loadedIds.includes(unknown[0]!) ? 1 : 0);

    const real = await Promise.all(ids.map((id) => first.get(id)));
    expect(real.map((shop) => shop?.id)).toEqual(ids);
    expect(instances[0]!.stats.get(name, 'bloom_reject')).toBe(rejected);
  });
});

describe('breakdown: mutex rebuild', () => {
  it('500 concurrent reads of a cold key over 5 instances cause exactly one load', async () => {
    const source = new Source<Shop>();
    source.rows.set('7', { id: '7', name: 'hot' });
    source.delayMs = 150; // a slow rebuild: everybody arrives while it runs
    const { name, caches } = defineEverywhere(source);

    const values = await concurrently(caches, 500, (i) => caches[i]!.get('7'));
    expect(values.every((value) => value?.name === 'hot')).toBe(true);
    expect(source.loads).toBe(1);
    expect(total(instances, name, 'rebuild')).toBe(1);
    expect(total(instances, name, 'lock_timeout')).toBe(0);
  });

  it('single-flight: one process sends one load even when nobody may wait for the lock', async () => {
    const source = new Source<Shop>();
    source.rows.set('8', { id: '8', name: 'hot' });
    source.delayMs = 100;
    // waitMs 0: without in-process coalescing every caller that lost the lock would load itself.
    const { name, first } = defineEverywhere(source, { waitMs: 0 });
    const values = await Promise.all(Array.from({ length: 200 }, () => first.get('8')));
    expect(values.every((value) => value?.name === 'hot')).toBe(true);
    expect(source.loads).toBe(1);
    expect(instances[0]!.stats.get(name, 'lock_timeout')).toBe(0);
    expect(instances[0]!.stats.get(name, 'miss')).toBe(200);
  });

  it('waiting is bounded: behind a stuck rebuild another instance loads by itself after waitMs', async () => {
    let loads = 0;
    let unstick = () => {};
    const stuck = new Promise<void>((resolve) => (unstick = resolve));
    const name = `stuck${++caseNo}`;
    const [a, b] = instances.map((instance) =>
      instance.caches.define<Shop>({
        name,
        key: (id) => `cache:${name}:${id}`,
        ttlMs: 60_000,
        waitMs: 200,
        load: async (id) => {
          loads += 1;
          if (loads === 1) await stuck; // the first rebuild hangs (a slow query, a paused process)
          return { id, name: 'loaded' };
        },
      }),
    );
    const first = a!.get('9');
    await expect.poll(() => loads).toBe(1); // instance a holds the lock, its load hangs (b would hang in it otherwise)
    const started = Date.now();
    const value = await b!.get('9');
    const ms = Date.now() - started;
    expect(value?.name).toBe('loaded');
    expect(ms).toBeGreaterThanOrEqual(190);
    expect(ms).toBeLessThan(1_000);
    expect(loads).toBe(2);
    expect(instances[1]!.stats.get(name, 'lock_timeout')).toBe(1);
    unstick();
    expect((await first)?.name).toBe('loaded');
  });

  it('a failing loader fails the callers that joined it; the next read tries again', async () => {
    let loads = 0;
    let fail = true;
    const name = `failing${++caseNo}`;
    const failing: Cache<Shop> = instances[0]!.caches.define<Shop>({
      name,
      key: (id) => `cache:${name}:${id}`,
      ttlMs: 60_000,
      load: async (id) => {
        loads += 1;
        await sleep(30);
        if (fail) throw new Error('database down');
        return { id, name: 'back' };
      },
    });
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => failing.get('1')));
    expect(results.every((result) => result.status === 'rejected')).toBe(true);
    expect(loads).toBe(1);
    expect(instances[0]!.stats.get(name, 'rebuild_error')).toBe(1);
    fail = false;
    expect(await failing.get('1')).toEqual({ id: '1', name: 'back' });
    expect(loads).toBe(2);
  });
});

describe('breakdown: logical expiry', () => {
  it('loads a key that was never warmed (one load for 500 reads) and stores it without TTL', async () => {
    const source = new Source<Shop>();
    source.rows.set('1', { id: '1', name: 'never warmed' });
    source.delayMs = 150;
    const { name, caches, key } = defineEverywhere(source, { strategy: 'logical', ttlMs: 60_000 });

    const values = await concurrently(caches, 500, (i) => caches[i]!.get('1'));
    expect(values.every((value) => value?.name === 'never warmed')).toBe(true);
    expect(source.loads).toBe(1);
    expect(await redis().pttl(key('1'))).toBe(-1);
    const stored = JSON.parse((await redis().get(key('1')))!) as { data: Shop; expireAt: number };
    expect(stored.data.name).toBe('never warmed');
    expect(stored.expireAt).toBeGreaterThan(Date.now() + 50_000);
    expect(total(instances, name, 'rebuild')).toBe(1);
  });

  it('serves the stale value at once while exactly one instance rebuilds, then the new one', async () => {
    const source = new Source<Shop>();
    source.rows.set('2', { id: '2', name: 'old' });
    const { name, caches, first } = defineEverywhere(source, { strategy: 'logical', ttlMs: 100, jitterPercent: 0 });
    expect((await first.get('2'))?.name).toBe('old');
    source.rows.set('2', { id: '2', name: 'new' });
    await sleep(150); // logically expired now

    source.close(); // the rebuild will hang at the gate until we open it
    // All 500 answered while the rebuild is held at the gate: none waited for it.
    const during = await concurrently(caches, 500, (i) => caches[i]!.get('2'));
    expect(during.every((value) => value?.name === 'old')).toBe(true);
    expect(total(instances, name, 'stale')).toBe(500);
    await expect.poll(() => source.loads).toBe(2); // the warm-up and the rebuild, started in the background

    source.open();
    await Promise.all(instances.map((instance) => instance.caches.idle()));
    const after = await concurrently(caches, 50, (i) => caches[i]!.get('2'));
    expect(after.every((value) => value?.name === 'new')).toBe(true);
    expect(source.loads).toBe(2);
    expect(total(instances, name, 'rebuild')).toBe(2);
  });

  it('a missing id is cached as the null marker with a TTL, not forever', async () => {
    const source = new Source<Shop>();
    const { first, key } = defineEverywhere(source, { strategy: 'logical', nullTtlMs: 1_000 });
    expect(await first.get('nope')).toBeNull();
    expect(await redis().get(key('nope'))).toBe('');
    expect(await redis().pttl(key('nope'))).toBeGreaterThan(0);
  });

  it('a mutex-strategy reader treats an expired logical entry as a miss (mixed strategies during a rollout)', async () => {
    const source = new Source<Shop>();
    source.rows.set('3', { id: '3', name: 'v1' });
    const logical = defineEverywhere(source, { strategy: 'logical', ttlMs: 50, jitterPercent: 0 });
    await logical.first.get('3');
    source.rows.set('3', { id: '3', name: 'v2' });
    await sleep(80);
    const mutex = instances[1]!.caches.define<Shop>({ name: `${logical.name}m`, key: logical.key, load: source.load, ttlMs: 60_000 });
    expect((await mutex.get('3'))?.name).toBe('v2');
    expect(await redis().pttl(logical.key('3'))).toBeGreaterThan(0);
  });
});

describe('invalidation', () => {
  it.each(['mutex', 'logical'] as const)('%s: an update is visible on the next read, on every instance', async (strategy) => {
    const source = new Source<Shop>();
    source.rows.set('1', { id: '1', name: 'before' });
    const { caches } = defineEverywhere(source, { strategy });
    await Promise.all(caches.map((cache) => cache.get('1')));
    source.rows.set('1', { id: '1', name: 'after' });
    await caches[0]!.invalidate('1');
    for (const cache of caches) expect((await cache.get('1'))?.name).toBe('after');
  });

  it('a rebuild that read the source before an update cannot put the old value back', async () => {
    const source = new Source<Shop>();
    source.rows.set('1', { id: '1', name: 'before' });
    const { caches, key } = defineEverywhere(source);
    source.close();
    const slowRead = caches[0]!.get('1'); // reads "before", then hangs
    await expect.poll(() => source.loads).toBe(1); // it has read the row
    source.rows.set('1', { id: '1', name: 'after' });
    await caches[1]!.invalidate('1'); // the writer, on another instance
    source.open();
    expect((await slowRead)?.name).toBe('before'); // it started before the update
    expect((await redis().get(key('1')))?.startsWith('~inv:')).toBe(true); // its store was refused
    expect((await caches[2]!.get('1'))?.name).toBe('after');
    expect((await caches[0]!.get('1'))?.name).toBe('after');
  });

  it('a read started after invalidate() in the same process does not join the old load', async () => {
    const source = new Source<Shop>();
    source.rows.set('1', { id: '1', name: 'before' });
    const { first } = defineEverywhere(source, { waitMs: 5_000 });
    source.close();
    const old = first.get('1');
    await expect.poll(() => source.loads).toBe(1); // the old load has read the row and holds the lock
    source.rows.set('1', { id: '1', name: 'after' });
    await first.invalidate('1');
    const fresh = first.get('1'); // waits for the old holder's lock, then loads again
    await sleep(30);
    source.open();
    expect((await old)?.name).toBe('before');
    expect((await fresh)?.name).toBe('after');
    expect(source.loads).toBe(2);
  });

  it('takes ids with braces (escaped in the lock name, which may not move the hash tag)', async () => {
    const source = new Source<Shop>();
    source.rows.set('a{b}', { id: 'a{b}', name: 'braces' });
    const { first } = defineEverywhere(source);
    expect((await first.get('a{b}'))?.name).toBe('braces');
  });

  it('set() pre-warms a key (hmdp saveShop2Redis)', async () => {
    const source = new Source<Shop>();
    const { first, key } = defineEverywhere(source, { strategy: 'logical', ttlMs: 60_000 });
    await first.set('5', { id: '5', name: 'warm' });
    expect(await first.get('5')).toEqual({ id: '5', name: 'warm' });
    expect(source.loads).toBe(0);
    expect(await redis().pttl(key('5'))).toBe(-1);
  });
});

describe('change announcements (changeChannel)', () => {
  it('publishes the key of every write: invalidate, set, a rebuild that stored; not a rebuild an invalidation beat', async () => {
    const channel = `${prefix}cache:changes`;
    const subscriber = connectRedis(prefix);
    const heard: string[] = [];
    subscriber.on('message', (_channel: string, key: string) => heard.push(key));
    await subscriber.subscribe(channel);
    const { redis: client, locks } = instances[0]!;
    const source = new Source<Shop>();
    source.rows.set('1', { id: '1', name: 'one' });
    const cache = new CacheClient(client, { locks, changeChannel: channel }).define<Shop>({
      name: 'announced',
      key: (id) => `cache:announced:${id}`,
      load: source.load,
      ttlMs: 60_000,
    });
    try {
      await cache.get('1'); // a rebuild stores the shop
      await cache.get('2'); // and the null marker of a missing one
      await cache.get('1'); // a hit writes nothing
      await cache.invalidate('1');
      await cache.set('3', { id: '3', name: 'warm' });
      // A rebuild that read the row before an invalidation: its store is refused, and not announced.
      source.close();
      const old = cache.get('1');
      await expect.poll(() => source.loads).toBe(3);
      await cache.invalidate('1');
      source.open();
      await old;
      await expect.poll(() => heard.length).toBe(5);
      await sleep(50);
      expect(heard).toEqual(['cache:announced:1', 'cache:announced:2', 'cache:announced:1', 'cache:announced:3', 'cache:announced:1']);
    } finally {
      subscriber.disconnect();
    }
  });
});

describe('definitions', () => {
  it('rejects bad options', () => {
    const caches = instances[0]!.caches;
    const base = { name: 'x', key: (id: string) => id, load: async () => null, ttlMs: 1000 };
    expect(() => caches.define({ ...base, name: 'a{b}' })).toThrow(/Invalid cache name/);
    expect(() => caches.define({ ...base, ttlMs: 0 })).toThrow(/ttlMs/);
    expect(() => caches.define({ ...base, jitterPercent: 150 })).toThrow(/jitterPercent/);
    expect(() => caches.define({ ...base, strategy: 'lru' as never })).toThrow(/strategy/);
  });
});
