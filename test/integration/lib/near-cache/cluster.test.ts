import calculateSlot from 'cluster-key-slot';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NearCache, NearCacheCounters, type RedisClient } from '../../../../src/lib/near-cache/index.js';
import { startRedisCluster, type TestCluster } from '../../../../kit/redis-cluster.js';
import { eventually } from '../../../support/eventually.js';

// Client-side caching per node of a 3-master Redis Cluster (one replica each, for a failover):
// every node gets its own invalidation connection, and a failover flushes.
const keyPrefix = 'test:near-cluster:';
const keys = ['{a}k', '{b}k', '{c}k', '{d}k', '{e}k', '{f}k'];
let redisCluster: TestCluster;
const clients: Cluster[] = [];
const nears: NearCache[] = [];

const get = (redis: RedisClient, key: string) => redis.get(key);
const connect = (): Cluster => {
  const cluster = new Cluster(
    redisCluster.nodes.slice(0, 3).map((node) => ({ host: '127.0.0.1', port: Number(node.split(':')[1]) })),
    { keyPrefix, redisOptions: { maxRetriesPerRequest: 3 } },
  );
  clients.push(cluster);
  return cluster;
};

async function nearCache(): Promise<{ near: NearCache; stats: NearCacheCounters }> {
  const stats = new NearCacheCounters();
  const near = new NearCache(connect(), { maxEntries: 100, stats });
  nears.push(near);
  await near.start();
  return { near, stats };
}

beforeAll(async () => {
  redisCluster = await startRedisCluster({ masters: 3, replicas: 1, nodeTimeoutMs: 2_000 });
});

afterAll(async () => {
  await Promise.all(nears.map((near) => near.close()));
  clients.forEach((client) => client.disconnect());
  await redisCluster?.stop();
});

describe('NearCache on a Redis Cluster', () => {
  it('tracks keys on every master, and a failover flushes without ever serving a stale value', async () => {
    const writer = connect();
    const masters = new Set(await Promise.all(keys.map(async (key) => (await redisCluster.shardOf(calculateSlot(keyPrefix + key))).master)));
    expect(masters.size).toBe(3);
    const a = await nearCache();
    const b = await nearCache();
    for (const key of keys) await writer.set(key, 'v1');
    // Every node's tracking comes up as its connection is first used.
    await eventually(async () => {
      for (const key of keys) await a.near.read('r', key, get);
      expect(a.near.ready).toBe(true);
    }, 10_000);
    for (const key of keys) await a.near.read('r', key, get);
    const hits = a.stats.get('r', 'hit');
    for (const key of keys) expect(await a.near.read('r', key, get)).toBe('v1');
    expect(a.stats.get('r', 'hit')).toBe(hits + keys.length);

    for (const key of keys) await b.near.client.set(key, 'v2');
    await eventually(async () => {
      for (const key of keys) expect(await a.near.read('r', key, get)).toBe('v2');
    }, 1_000);

    // A graceful failover of the shard of keys[0]: its replica becomes the master.
    const { replicas } = await redisCluster.shardOf(calculateSlot(keyPrefix + keys[0]!));
    const replica = new Redis({ host: '127.0.0.1', port: replicas[0]! });
    try {
      const flushes = a.stats.get('*', 'flush');
      await replica.cluster('FAILOVER');
      await eventually(async () => expect((await redisCluster.shardOf(calculateSlot(keyPrefix + keys[0]!))).master).toBe(replicas[0]), 10_000);
      await writer.set(keys[0]!, 'v3');
      await eventually(async () => expect(await a.near.read('r', keys[0]!, get)).toBe('v3'), 10_000);
      // The demoted master's connections drop, or the next MOVED refreshes the slots: either flushes.
      await eventually(() => expect(a.stats.get('*', 'flush')).toBeGreaterThan(flushes), 10_000);
      // Cached again on the new master, and its writes still invalidate.
      await eventually(async () => {
        await a.near.read('r', keys[0]!, get);
        const before = a.stats.get('r', 'hit');
        await a.near.read('r', keys[0]!, get);
        expect(a.stats.get('r', 'hit')).toBe(before + 1);
      }, 10_000);
      await writer.set(keys[0]!, 'v4');
      await eventually(async () => expect(await a.near.read('r', keys[0]!, get)).toBe('v4'), 1_000);
    } finally {
      replica.disconnect();
    }
  });
});
