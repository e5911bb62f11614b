import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient, fairQueueKey, lockKey, rwLeasesKey, rwLockKey } from '../../../src/lib/lock/index.js';
import { startRedisCluster, type TestCluster } from '../../../kit/redis-cluster.js';

// The fair and read-write locks on a throw-away 3-node Redis Cluster, with a key prefix as the app
// runs it: every script touches keys of one slot only (a CROSSSLOT error otherwise), and the
// wake-ups (the fair queue head's own channel, the read-write lock's channel) reach waiters
// through a Cluster subscriber. The waiters poll every 10 s, so only wake-ups can serve them fast.
const keyPrefix = 'test:fair-rw-cluster:';
let redisCluster: TestCluster;
let cluster: Cluster;
let locks: LockClient;

beforeAll(async () => {
  redisCluster = await startRedisCluster(3);
  cluster = new Cluster(
    redisCluster.nodes.map((node) => ({ host: '127.0.0.1', port: Number(node.split(':')[1]) })),
    { keyPrefix, redisOptions: { maxRetriesPerRequest: 3 } },
  );
  await cluster.ping();
  locks = new LockClient(cluster, { pollMs: 10_000 });
});

afterAll(async () => {
  await locks?.close();
  cluster?.disconnect();
  await redisCluster?.stop();
});

describe('on a Redis Cluster', () => {
  it('fair lock: queues, wakes each head in turn, in arrival order, on lock names of every node', async () => {
    // Hash slots 12676, 487, 4550, 8481: all three nodes.
    for (const name of ['fair-a', 'fair-b', 'fair-c', 'fair-d']) {
      const holder = await locks.fairLock(name).lock({ leaseMs: 20_000 });
      const order: number[] = [];
      const waiters: Array<Promise<void>> = [];
      for (const i of [0, 1, 2]) {
        waiters.push(
          locks.runInContext(async () => {
            const handle = await locks.fairLock(name).lock({ waitMs: 8_000, leaseMs: 5_000 });
            order.push(i);
            await handle.release();
          }),
        );
        // Arrive in this order: the next waiter starts only once this one is in the queue (a head
        // start of 100 ms decided nothing on a busy machine).
        await expect.poll(() => cluster.llen(fairQueueKey(name)), { interval: 10 }).toBe(i + 1);
      }
      const releasedAt = Date.now();
      await holder.release();
      await Promise.all(waiters);
      expect(order).toEqual([0, 1, 2]);
      expect(Date.now() - releasedAt).toBeLessThan(2_000);
      expect(await cluster.exists(lockKey(name))).toBe(0);
    }
  });

  it('read-write lock: shares reads, wakes the writer on the last read release, downgrades', async () => {
    // Hash slots 16056, 3803, 7930: all three nodes.
    for (const name of ['rw-a', 'rw-b', 'rw-c']) {
      const rw = locks.readWriteLock(name);
      const readers = await Promise.all([0, 1].map(() => locks.runInContext(() => rw.readLock().lock({ leaseMs: 20_000 }))));
      const writer = locks.runInContext(async () => {
        const write = await rw.writeLock().lock({ waitMs: 8_000 });
        const read = await rw.readLock().lock({ waitMs: 0 }); // downgrade
        await write.release();
        return read;
      });
      await sleep(200);
      await Promise.all(readers.map((reader) => reader.release()));
      const releasedAt = Date.now();
      const downgraded = await writer;
      expect(Date.now() - releasedAt).toBeLessThan(1_000);
      expect(await rw.readLock().isLocked()).toBe(true);
      await downgraded.release();
      expect(await cluster.exists(rwLockKey(name))).toBe(0);
      expect(await cluster.exists(rwLeasesKey(name))).toBe(0);
    }
  });
});
