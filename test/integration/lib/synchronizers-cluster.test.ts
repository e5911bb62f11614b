import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient } from '../../../src/lib/lock/index.js';
import { startRedisCluster, type TestCluster } from '../../../kit/redis-cluster.js';

// The semaphores and the latch on a throw-away 3-node Redis Cluster, with a key prefix as the app
// runs it: every script touches the keys of one slot (one hash tag per name), and waiters are
// woken through the Cluster subscriber (their poll is 10 s).
const keyPrefix = 'test:sync-cluster:';
let redisCluster: TestCluster;
let cluster: Cluster;
let holder: LockClient;
let waiter: LockClient;
const names = ['pool:1', 'order:42', 'voucher:7']; // spread over the slots of different nodes

beforeAll(async () => {
  redisCluster = await startRedisCluster(3);
  cluster = new Cluster(
    redisCluster.nodes.map((node) => ({ host: '127.0.0.1', port: Number(node.split(':')[1]) })),
    { keyPrefix, redisOptions: { maxRetriesPerRequest: 3 } },
  );
  await cluster.ping();
  // Leases of 1 s, renewed every third of it: a busy machine's scheduling pause does not lose them.
  holder = new LockClient(cluster, { defaultLeaseMs: 1_000 });
  waiter = new LockClient(cluster, { pollMs: 10_000 });
});

afterAll(async () => {
  await Promise.all([holder?.close(), waiter?.close()]);
  cluster?.disconnect();
  await redisCluster?.stop();
});

describe('synchronizers on a Redis Cluster', () => {
  it('semaphore: takes, waits, is woken by a release', async () => {
    for (const name of names) {
      const semaphore = holder.semaphore(name);
      expect(await semaphore.trySetPermits(1)).toBe(true);
      expect(await semaphore.tryAcquire()).toBe(true);
      const waiting = waiter.semaphore(name).tryAcquire({ waitMs: 5_000 });
      await sleep(200);
      const releasedAt = Date.now();
      await semaphore.release();
      expect(await waiting).toBe(true);
      expect(Date.now() - releasedAt).toBeLessThan(1_000);
      expect(await semaphore.drainPermits()).toBe(0);
      await semaphore.delete();
    }
  });

  it('permit-expirable semaphore: leases renewed by the watchdog, a waiter woken by the release', async () => {
    for (const name of names) {
      const semaphore = holder.permitExpirableSemaphore(name);
      expect(await semaphore.trySetPermits(2)).toBe(true);
      const lease = await semaphore.acquire({ permits: 2 }); // lease 1 s, watchdog
      await sleep(1_500); // past the lease: only renewals keep it
      expect(lease.signal.aborted).toBe(false);
      const waiting = waiter.permitExpirableSemaphore(name).tryAcquire({ waitMs: 5_000, leaseMs: 5_000 });
      await sleep(100);
      const releasedAt = Date.now();
      expect(await lease.release()).toBe(true);
      const next = await waiting;
      expect(next).not.toBeNull();
      expect(Date.now() - releasedAt).toBeLessThan(1_000);
      await next!.release();
      await semaphore.delete();
    }
  });

  it('count-down latch: every waiter woken at zero', async () => {
    for (const name of names) {
      const latch = holder.countDownLatch(name);
      expect(await latch.trySetCount(1)).toBe(true);
      const waiting = [1, 2].map(() => waiter.countDownLatch(name).await({ waitMs: 5_000 }));
      await sleep(200);
      const openedAt = Date.now();
      expect(await latch.countDown()).toBe(0);
      expect(await Promise.all(waiting)).toEqual([true, true]);
      expect(Date.now() - openedAt).toBeLessThan(1_000);
    }
  });
});
