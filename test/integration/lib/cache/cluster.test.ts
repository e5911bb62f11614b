import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BloomFilter, CacheClient, CacheCounters } from '../../../../src/lib/cache/index.js';
import { LockClient } from '../../../../src/lib/lock/index.js';
import { startRedisCluster, type TestCluster } from '../../../../kit/redis-cluster.js';
import { Source } from './support.js';

// A throw-away 3-master Redis Cluster: the cache's compare-and-set and the Bloom filter scripts,
// including the build-aside RENAME, must each touch one slot (CROSSSLOT otherwise).
let redisCluster: TestCluster;
let cluster: Cluster;
let locks: LockClient;

beforeAll(async () => {
  redisCluster = await startRedisCluster(3);
  cluster = new Cluster(
    redisCluster.nodes.map((node) => ({ host: '127.0.0.1', port: Number(node.split(':')[1]) })),
    { keyPrefix: 'test:cache-cluster:', redisOptions: { maxRetriesPerRequest: 3 } },
  );
  await cluster.ping();
  locks = new LockClient(cluster);
}, 60_000);

afterAll(async () => {
  await locks?.close();
  cluster?.disconnect();
  await redisCluster?.stop();
});

describe('cache on a Redis Cluster', () => {
  it('loads once, stores by compare-and-set, invalidates, and serves stale under logical expiry', async () => {
    const stats = new CacheCounters();
    const caches = new CacheClient(cluster, { locks, stats });
    const source = new Source<{ id: string; v: number }>();
    for (let i = 1; i <= 20; i += 1) source.rows.set(String(i), { id: String(i), v: 1 });
    source.delayMs = 50;
    const mutex = caches.define({ name: 'm', key: (id) => `cache:m:${id}`, load: source.load, ttlMs: 60_000 });
    // 20 ids spread over the three masters, 10 concurrent reads each.
    const ids = [...source.rows.keys()];
    await Promise.all(ids.flatMap((id) => Array.from({ length: 10 }, () => mutex.get(id))));
    expect(source.loads).toBe(20);
    source.rows.set('3', { id: '3', v: 2 });
    await mutex.invalidate('3');
    expect(await mutex.get('3')).toEqual({ id: '3', v: 2 });

    const logical = caches.define({ name: 'l', key: (id) => `cache:l:${id}`, load: source.load, ttlMs: 50, jitterPercent: 0, strategy: 'logical' });
    expect(await logical.get('4')).toEqual({ id: '4', v: 1 });
    source.rows.set('4', { id: '4', v: 2 });
    await sleep(80);
    expect(await logical.get('4')).toEqual({ id: '4', v: 1 }); // stale, rebuild started
    await caches.idle();
    expect(await logical.get('4')).toEqual({ id: '4', v: 2 });
    // The read after the sleep was stale; the rebuilt value lives 50 ms too, so on a loaded host
    // the last read may find it stale as well (and still return it).
    expect(stats.get('l', 'stale')).toBeGreaterThanOrEqual(1);
  });

  it('builds a Bloom filter aside and RENAMEs it over the live one within one slot', async () => {
    const bloom = new BloomFilter(cluster, { name: 'shop', expectedItems: 1000, falsePositiveRate: 0.01, locks });
    const ids = Array.from({ length: 500 }, (_, i) => String(i + 1));
    expect(
      await bloom.rebuild(async function* () {
        yield ids;
      }),
    ).toBe(500);
    await bloom.add('100000');
    const answers = await Promise.all([...ids, '100000'].map((id) => bloom.check(id)));
    expect(answers.every((answer) => answer === 'maybe')).toBe(true);
    const unknown = await Promise.all(Array.from({ length: 200 }, (_, i) => bloom.check(String(900_000 + i))));
    expect(unknown.filter((answer) => answer === 'absent').length).toBeGreaterThan(190);
  });
});
