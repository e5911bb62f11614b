import type { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { LockClient } from '../../../src/lib/lock/index.js';
import { killFixtures, runFixture } from '../../../kit/children.js';
import { connectRedis, deleteKeys, uniquePrefix } from '../../support/redis.js';

// The semaphores and the latch between OS processes, and a permit holder killed with SIGKILL.
const rootPrefix = uniquePrefix('sync-processes');
let testNumber = 0;
const clients: Redis[] = [];
const lockClients: LockClient[] = [];

function redisFor(prefix: string): Redis {
  const redis = connectRedis(prefix);
  clients.push(redis);
  return redis;
}

function locksFor(redis: Redis, options: ConstructorParameters<typeof LockClient>[1] = {}): LockClient {
  const locks = new LockClient(redis, options);
  lockClients.push(locks);
  return locks;
}

afterAll(async () => {
  killFixtures();
  await Promise.all(lockClients.map((locks) => locks.close()));
  for (const redis of clients) redis.disconnect();
  await deleteKeys(rootPrefix);
});

const fixture = (file: string): URL => new URL(`./fixtures/${file}`, import.meta.url);

describe('between OS processes', () => {
  for (const kind of ['plain', 'expirable'] as const) {
    it(`${kind} semaphore of 2 permits: 4 processes, never more than 2 inside, every round done`, async () => {
      const prefix = `${rootPrefix}${++testNumber}:`;
      const redis = redisFor(prefix);
      const locks = locksFor(redis);
      const set = kind === 'plain' ? locks.semaphore('pool').trySetPermits(2) : locks.permitExpirableSemaphore('pool').trySetPermits(2);
      expect(await set).toBe(true);
      const iterations = 25;
      const workers = Array.from({ length: 4 }, () => runFixture(fixture('semaphore-worker.ts'), [prefix, kind, String(iterations)]));
      await Promise.all(workers.map((worker) => worker.exited));
      expect(Number(await redis.get('done'))).toBe(4 * iterations);
      expect(Number(await redis.get('max-inside'))).toBe(2); // both permits were used, never more
      const available = kind === 'plain' ? locks.semaphore('pool').availablePermits() : locks.permitExpirableSemaphore('pool').availablePermits();
      expect(await available).toBe(2);
    });
  }

  it('latch: three waiting processes are let through together by the last count-down', async () => {
    const prefix = `${rootPrefix}${++testNumber}:`;
    const latch = locksFor(redisFor(prefix)).countDownLatch('start');
    await latch.trySetCount(2);
    const waiters = Array.from({ length: 3 }, () => runFixture(fixture('await-latch.ts'), [prefix, 'start']));
    await Promise.all(waiters.map((waiter) => waiter.waitForLine(/^waiting$/)));
    await latch.countDown();
    const openedAt = Date.now();
    await latch.countDown();
    await Promise.all(waiters.map((waiter) => waiter.waitForLine(/^open$/, 5_000)));
    expect(Date.now() - openedAt).toBeLessThan(2_000); // pub/sub: their poll is 10 s
    await Promise.all(waiters.map((waiter) => waiter.exited));
  });
});

describe('a permit holder killed with SIGKILL', () => {
  it('keeps its permits while alive (watchdog) and gives them back within one lease after death', async () => {
    const prefix = `${rootPrefix}${++testNumber}:`;
    const leaseMs = 1_500;
    const semaphore = locksFor(redisFor(prefix), { pollMs: 10_000 }).permitExpirableSemaphore('pool');
    await semaphore.trySetPermits(2);
    const holder = runFixture(fixture('hold-permits.ts'), [prefix, 'pool', '2', String(leaseMs)]);
    await holder.waitForLine(/^acquired /);
    await new Promise((resolve) => setTimeout(resolve, 2 * leaseMs)); // only renewals keep them
    expect(await semaphore.availablePermits()).toBe(0);
    expect(holder.output()).not.toContain('lost');

    const waiting = semaphore.tryAcquire({ permits: 2, waitMs: 10_000, leaseMs: 5_000 });
    holder.child.kill('SIGKILL');
    const killedAt = Date.now();
    const lease = await waiting;
    expect(lease).not.toBeNull();
    expect(Date.now() - killedAt).toBeLessThan(leaseMs + 1_000); // waiter sleeps until the lease end
    await lease!.release();
  });

  it('a plain semaphore, by contrast, never gets the permits of a dead holder back', async () => {
    const prefix = `${rootPrefix}${++testNumber}:`;
    const redis = redisFor(prefix);
    const semaphore = locksFor(redis).semaphore('pool');
    await semaphore.trySetPermits(1);
    expect(await semaphore.tryAcquire()).toBe(true); // a "holder" that then dies: nothing gives it back
    expect(await semaphore.tryAcquire({ waitMs: 1_000 })).toBe(false);
    expect(await semaphore.availablePermits()).toBe(0);
  });
});
