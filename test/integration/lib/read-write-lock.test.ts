import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { LockClient, LockNotHeldError, LockUpgradeError, rwLeasesKey, rwLockKey, type LockHandle } from '../../../src/lib/lock/index.js';
import { killFixtures, runFixture } from '../../../kit/children.js';
import { connectRedis, deleteKeys, uniquePrefix } from '../../support/redis.js';

const rootPrefix = uniquePrefix('rw-lock');
let testNumber = 0;
const redisClients: Redis[] = [];
const lockClients: LockClient[] = [];

function world(options: ConstructorParameters<typeof LockClient>[1] = {}): { prefix: string; redis: Redis; locks: LockClient } {
  const prefix = `${rootPrefix}${++testNumber}:`;
  const redis = connectRedis(prefix);
  redisClients.push(redis);
  const locks = new LockClient(redis, options);
  lockClients.push(locks);
  return { prefix, redis, locks };
}

const workerFixture = new URL('./fixtures/rw-worker.ts', import.meta.url);

afterEach(async () => {
  killFixtures();
  await Promise.all(lockClients.splice(0).map((locks) => locks.close()));
});

afterAll(async () => {
  for (const redis of redisClients) redis.disconnect();
  await deleteKeys(rootPrefix);
});

/** Runs `fn` as a new lock owner. */
const as = <T>(locks: LockClient, fn: () => Promise<T>): Promise<T> => locks.runInContext(fn);

describe('read-write lock', () => {
  it('shares the read lock, excludes the writer while any reader holds it, and readers while the writer does', async () => {
    const { redis, locks } = world();
    const rw = locks.readWriteLock('doc');
    const readerA = await as(locks, () => rw.readLock().lock({ leaseMs: 10_000 }));
    const readerB = await as(locks, () => rw.readLock().lock({ leaseMs: 10_000 }));
    expect(readerB.fencingToken).toBeGreaterThan(readerA.fencingToken);
    expect(await rw.readLock().isLocked()).toBe(true);
    expect(await as(locks, () => rw.writeLock().tryLock({ leaseMs: 10_000 }))).toBeNull();
    await readerA.release();
    expect(await as(locks, () => rw.writeLock().tryLock({ leaseMs: 10_000 }))).toBeNull();
    await readerB.release();
    expect(await redis.exists(rwLockKey('doc'), rwLeasesKey('doc'))).toBe(0);

    const writer = await as(locks, () => rw.writeLock().lock({ leaseMs: 10_000 }));
    expect(writer.fencingToken).toBeGreaterThan(readerB.fencingToken);
    expect(await rw.writeLock().isLocked()).toBe(true);
    expect(await as(locks, () => rw.readLock().tryLock({ leaseMs: 10_000 }))).toBeNull();
    expect(await as(locks, () => rw.writeLock().tryLock({ leaseMs: 10_000 }))).toBeNull();
    await writer.release();
    expect(await redis.exists(rwLockKey('doc'), rwLeasesKey('doc'))).toBe(0);
  });

  it('re-enters both locks per async context and releases by the owner only', async () => {
    const { locks } = world();
    const rw = locks.readWriteLock('re');
    await as(locks, async () => {
      const outer = await rw.writeLock().lock({ leaseMs: 10_000 });
      const inner = await rw.writeLock().lock({ leaseMs: 10_000 });
      expect(inner.fencingToken).toBe(outer.fencingToken);
      expect(await rw.writeLock().holdCount()).toBe(2);
      // Another owner cannot release it.
      await expect(as(locks, () => rw.writeLock().unlock())).rejects.toBeInstanceOf(LockNotHeldError);
      await rw.writeLock().unlock();
      await rw.writeLock().unlock();
      expect(await rw.writeLock().holdCount()).toBe(0);

      await rw.readLock().lock({ leaseMs: 10_000 });
      await rw.readLock().lock({ leaseMs: 10_000 });
      expect(await rw.readLock().holdCount()).toBe(2);
      await rw.readLock().unlock();
      await rw.readLock().unlock();
      await expect(rw.readLock().unlock()).rejects.toBeInstanceOf(LockNotHeldError);
    });
  });

  it('lets the writer take the read lock and keep it after releasing the write lock (downgrade)', async () => {
    const { locks } = world();
    const rw = locks.readWriteLock('down');
    let read: LockHandle | undefined;
    await as(locks, async () => {
      const write = await rw.writeLock().lock({ leaseMs: 10_000 });
      read = await rw.readLock().lock({ waitMs: 0, leaseMs: 10_000 });
      expect(await as(locks, () => rw.readLock().tryLock({ leaseMs: 10_000 }))).toBeNull(); // still write mode
      await write.release();
    });
    expect(await rw.readLock().isLocked()).toBe(true);
    const otherReader = await as(locks, () => rw.readLock().tryLock({ leaseMs: 10_000 }));
    expect(otherReader).not.toBeNull();
    expect(await as(locks, () => rw.writeLock().tryLock({ leaseMs: 10_000 }))).toBeNull();
    await otherReader!.release();
    await read!.release();
    const writer = await as(locks, () => rw.writeLock().tryLock({ leaseMs: 10_000 }));
    expect(writer).not.toBeNull();
    await writer!.release();
  });

  it("answers isLocked and holdCount with Redisson's meaning: the read lock counts the writer's own reads, an ended lease counts as gone", async () => {
    const { locks } = world();
    const rw = locks.readWriteLock('state');
    await as(locks, async () => {
      const write = await rw.writeLock().lock({ leaseMs: 400 });
      expect(await rw.writeLock().isLocked()).toBe(true);
      expect(await rw.readLock().isLocked()).toBe(false); // write mode, nobody reads

      const read = await rw.readLock().lock({ leaseMs: 10_000 }); // the writer reads too
      expect(await rw.readLock().isLocked()).toBe(true);
      expect(await rw.writeLock().isLocked()).toBe(true);
      expect([await rw.readLock().holdCount(), await rw.writeLock().holdCount()]).toEqual([1, 1]);
      expect(await as(locks, () => Promise.all([rw.readLock().holdCount(), rw.writeLock().holdCount()]))).toEqual([0, 0]);

      // The write lease ends; no script has run since to drop that hold.
      await expect.poll(() => rw.writeLock().isLocked()).toBe(false);
      expect(await rw.writeLock().holdCount()).toBe(0);
      expect(await rw.readLock().isLocked()).toBe(true);
      expect(await rw.readLock().holdCount()).toBe(1);
      expect(await write.release()).toBe(false);
      await read.release();
      expect(await rw.readLock().isLocked()).toBe(false);
      expect(await rw.readLock().holdCount()).toBe(0);
    });
  });

  it('refuses a read → write upgrade with an error naming the lock, instead of waiting forever', async () => {
    const { locks } = world();
    const rw = locks.readWriteLock('up');
    await as(locks, async () => {
      const read = await rw.readLock().lock({ leaseMs: 10_000 });
      const upgrade = rw.writeLock().lock({ waitMs: 5_000 });
      await expect(upgrade).rejects.toBeInstanceOf(LockUpgradeError);
      await expect(upgrade).rejects.toThrow('"up"');
      await read.release();
      const write = await rw.writeLock().lock({ leaseMs: 10_000 });
      await write.release();
    });
  });

  it('renews both locks with the watchdog and tells a holder whose hold was lost', async () => {
    // A lease of 1 s, renewed every third of it: a busy machine's scheduling pause cannot lose it
    // (a 300 ms lease was lost by any pause over 200 ms).
    const { redis, locks } = world({ defaultLeaseMs: 1_000 });
    const rw = locks.readWriteLock('dog');
    const read = await as(locks, () => rw.readLock().lock());
    await sleep(2_000); // two leases: only renewals keep it
    expect(await rw.readLock().isLocked()).toBe(true);
    await read.release();
    const write = await as(locks, () => rw.writeLock().lock());
    await sleep(2_000);
    expect(await rw.writeLock().isLocked()).toBe(true);
    await redis.del(rwLockKey('dog'), rwLeasesKey('dog')); // an outsider, or a failover, loses it
    await expect.poll(() => write.signal.aborted, { timeout: 5_000 }).toBe(true); // found at the next renewal
    expect(await write.release()).toBe(false);
  });

  it('wakes a waiting writer on the last read release, and every waiting reader of a process on the write release', async () => {
    const { locks } = world({ pollMs: 10_000 }); // only wake-ups count
    const rw = locks.readWriteLock('wake');
    const readers = await Promise.all([0, 1].map(() => as(locks, () => rw.readLock().lock({ leaseMs: 20_000 }))));
    const writerWaiting = as(locks, () => rw.writeLock().lock({ waitMs: 8_000, leaseMs: 20_000 }));
    await sleep(200);
    await readers[0]!.release();
    await readers[1]!.release();
    let released = Date.now();
    const writer = await writerWaiting;
    expect(Date.now() - released).toBeLessThan(1_000);

    const readersWaiting = [0, 1, 2].map(() => as(locks, () => rw.readLock().lock({ waitMs: 8_000, leaseMs: 5_000 })));
    await sleep(200);
    released = Date.now();
    await writer.release();
    const woken = await Promise.all(readersWaiting);
    expect(Date.now() - released).toBeLessThan(1_000);
    await Promise.all(woken.map((handle) => handle.release()));
  });

  it('lets a writer in within one lease after a reader process is killed, while another reader keeps renewing', async () => {
    const { prefix, locks } = world({ defaultLeaseMs: 1_500, pollMs: 200 });
    const rw = locks.readWriteLock('pair');
    const deadReader = runFixture(workerFixture, [prefix, 'hold-read', '0', '1500']);
    await deadReader.waitForLine(/^reading$/);
    const liveReader = await as(locks, () => rw.readLock().lock()); // watchdog keeps the keys alive
    deadReader.child.kill('SIGKILL');
    const killedAt = Date.now();
    const writer = as(locks, () => rw.writeLock().lock({ waitMs: 10_000, leaseMs: 5_000 }));
    await sleep(300);
    await liveReader.release();
    const handle = await writer;
    expect(Date.now() - killedAt).toBeLessThan(1_500 + 1_000);
    await handle.release();
  });

  it('lets readers in within one lease after the writer process is killed (the watchdog kept it before)', async () => {
    const { prefix, locks } = world({ pollMs: 200 });
    const rw = locks.readWriteLock('pair');
    const writer = runFixture(workerFixture, [prefix, 'hold-write', '0', '1500']);
    await writer.waitForLine(/^writing$/);
    await sleep(3_000); // twice the lease: only renewals keep it
    expect(await rw.writeLock().isLocked()).toBe(true);
    const readers = [0, 1].map(() => as(locks, () => rw.readLock().lock({ waitMs: 10_000, leaseMs: 5_000 })));
    writer.child.kill('SIGKILL');
    const killedAt = Date.now();
    const handles = await Promise.all(readers);
    expect(Date.now() - killedAt).toBeLessThan(1_500 + 1_000);
    await Promise.all(handles.map((handle) => handle.release()));
  });

  it('gives up waiting on abort and after waitMs, naming the lock', async () => {
    const { locks } = world();
    const rw = locks.readWriteLock('busy');
    const writer = await as(locks, () => rw.writeLock().lock({ leaseMs: 10_000 }));
    const controller = new AbortController();
    const aborted = as(locks, () => rw.readLock().lock({ signal: controller.signal }));
    await sleep(100);
    controller.abort(new Error('caller gave up'));
    await expect(aborted).rejects.toThrow('caller gave up');
    const startedAt = Date.now();
    await expect(as(locks, () => rw.writeLock().lock({ waitMs: 300 }))).rejects.toThrow('Could not acquire lock "busy" within 300 ms');
    expect(Date.now() - startedAt).toBeLessThan(1_000);
    await writer.release();
  });

  it('never shows a reader a half-written pair, never lets a writer see a reader, and shares reads, across 4 processes', async () => {
    const { prefix, redis } = world();
    const workers = Array.from({ length: 4 }, () => runFixture(workerFixture, [prefix, 'mix', '40']));
    await Promise.all(workers.map((worker) => worker.exited));
    const seen = workers.map((worker) => JSON.parse(worker.output().trim()) as Record<string, number>);
    const total = (field: string): number => seen.reduce((sum, one) => sum + one[field]!, 0);
    expect(total('torn')).toBe(0);
    expect(total('readersSeenByWriter')).toBe(0);
    expect(Math.max(...seen.map((one) => one.maxReaders!))).toBeGreaterThan(1); // readers did overlap
    expect(Number(await redis.get('a'))).toBe(total('writes'));
    expect(await redis.get('b')).toBe(await redis.get('a'));
    expect(await redis.exists(rwLockKey('pair'), rwLeasesKey('pair'))).toBe(0);
  });
});
