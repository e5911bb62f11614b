import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LockClient, LockLostError, PermitTimeoutError, latchKey, permitSemaphoreKeys, semaphoreKey } from '../../../src/lib/lock/index.js';
import { connectRedis, deleteKeys, uniquePrefix } from '../../support/redis.js';

// Semaphore, permit-expirable semaphore and count-down latch on the shared test Redis, each test
// under fresh names. Clients poll only every 10 s: a waiter let through sooner was woken by
// pub/sub (or by the lease-end hint of the expirable semaphore).
const keyPrefix = uniquePrefix('sync');
let redis: Redis;
let admin: Redis;
const clients: LockClient[] = [];
let nameCounter = 0;
const freshName = (): string => `s-${++nameCounter}`;

function newClient(options: ConstructorParameters<typeof LockClient>[1] = {}): LockClient {
  const client = new LockClient(redis, { pollMs: 10_000, ...options });
  clients.push(client);
  return client;
}

beforeAll(() => {
  redis = connectRedis(keyPrefix);
  admin = connectRedis(keyPrefix);
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});

afterAll(async () => {
  await deleteKeys(keyPrefix);
  redis.disconnect();
  admin.disconnect();
});

describe('Semaphore', () => {
  it('sets permits once, takes and gives back n at a time, drains and adds', async () => {
    const semaphore = newClient().semaphore(freshName());
    expect(await semaphore.tryAcquire()).toBe(false); // never set: no permits
    expect(await semaphore.trySetPermits(3)).toBe(true);
    expect(await semaphore.trySetPermits(10)).toBe(false);
    expect(await admin.get(semaphoreKey(semaphore.name))).toBe('3');

    expect(await semaphore.tryAcquire({ permits: 2 })).toBe(true);
    expect(await semaphore.tryAcquire({ permits: 2 })).toBe(false); // all or none
    expect(await semaphore.availablePermits()).toBe(1);
    expect(await semaphore.release(2)).toBe(3);
    expect(await semaphore.drainPermits()).toBe(3);
    expect(await semaphore.availablePermits()).toBe(0);
    expect(await semaphore.addPermits(5)).toBe(5);
    expect(await semaphore.addPermits(-2)).toBe(3);
    await semaphore.setPermits(1);
    expect(await semaphore.availablePermits()).toBe(1);
    expect(await semaphore.delete()).toBe(true);
    await expect(semaphore.tryAcquire({ permits: 0 })).rejects.toThrow(RangeError);
    expect(() => newClient().semaphore('a{b')).toThrow(TypeError);
  });

  it('wakes waiters by pub/sub: a release of 2 lets two waiters through at once', async () => {
    const holder = newClient().semaphore(freshName());
    await holder.trySetPermits(0);
    const waiterClient = newClient();
    const releasedAt: number[] = [];
    const through: number[] = [];
    const waiting = [1, 2, 3].map(async () => {
      const got = await waiterClient.semaphore(holder.name).tryAcquire({ waitMs: 3_000 });
      if (got) through.push(Date.now() - releasedAt[0]!);
      return got;
    });
    await sleep(200);
    releasedAt.push(Date.now());
    await holder.release(2);
    // Which two of the three get the permits is not promised (whoever Redis serves first), only that
    // two do, by the release's wake-up: their poll is 10 s and they give up after 3.
    expect((await Promise.all(waiting)).sort()).toEqual([false, true, true]); // the third timed out: no permit left
    expect(through).toHaveLength(2);
    expect(Math.max(...through)).toBeLessThan(1_000);
    expect(await holder.availablePermits()).toBe(0);
  });

  it('acquire() throws PermitTimeoutError naming the semaphore, and an abort stops the wait', async () => {
    const semaphore = newClient().semaphore(freshName());
    await semaphore.trySetPermits(1);
    await expect(semaphore.acquire({ permits: 2, waitMs: 200 })).rejects.toThrow(
      `Could not acquire 2 permit(s) of semaphore "${semaphore.name}" within 200 ms`,
    );
    await expect(semaphore.acquire({ permits: 2, waitMs: 200 })).rejects.toBeInstanceOf(PermitTimeoutError);
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('stop')), 100);
    await expect(semaphore.acquire({ permits: 2, signal: controller.signal })).rejects.toThrow('stop');
    expect(await semaphore.availablePermits()).toBe(1);
  });
});

describe('CountDownLatch', () => {
  it('lets every waiter through at once when counted down to zero, and only then', async () => {
    const latch = newClient().countDownLatch(freshName());
    expect(await latch.trySetCount(2)).toBe(true);
    expect(await latch.trySetCount(5)).toBe(false); // still counting
    const waiterClient = newClient();
    const waiting = [1, 2, 3].map(() => waiterClient.countDownLatch(latch.name).await({ waitMs: 5_000 }));
    expect(await latch.countDown()).toBe(1);
    await sleep(200);
    expect(await latch.getCount()).toBe(1);
    const openedAt = Date.now();
    expect(await latch.countDown()).toBe(0);
    expect(await Promise.all(waiting)).toEqual([true, true, true]);
    expect(Date.now() - openedAt).toBeLessThan(1_000);
    expect(await admin.exists(latchKey(latch.name))).toBe(0);
    expect(await latch.countDown()).toBe(0); // open stays open
    expect(await latch.await({ waitMs: 0 })).toBe(true);
    expect(await latch.trySetCount(1)).toBe(true); // and can be set again
  });

  it('await times out with false, and an abort rejects', async () => {
    const latch = newClient().countDownLatch(freshName());
    await latch.trySetCount(1);
    const start = Date.now();
    expect(await latch.await({ waitMs: 300 })).toBe(false);
    expect(Date.now() - start).toBeGreaterThanOrEqual(290);
    await expect(latch.await({ signal: AbortSignal.timeout(100) })).rejects.toThrow();
    expect(await latch.delete()).toBe(true);
  });
});

describe('PermitExpirableSemaphore', () => {
  it('gives each permit an id and a lease, and takes them back by id', async () => {
    const semaphore = newClient().permitExpirableSemaphore(freshName());
    expect(await semaphore.trySetPermits(3)).toBe(true);
    expect(await semaphore.trySetPermits(3)).toBe(false);
    const lease = await semaphore.tryAcquire({ permits: 2, leaseMs: 10_000 });
    expect(lease!.permitIds).toHaveLength(2);
    const [, leasesKey] = permitSemaphoreKeys(semaphore.name);
    expect(await admin.zcard(leasesKey)).toBe(2);
    expect(await semaphore.availablePermits()).toBe(1);
    expect(await semaphore.tryAcquire({ permits: 2 })).toBeNull();
    expect(await lease!.release()).toBe(true);
    expect(await lease!.release()).toBe(false); // idempotent
    expect(await semaphore.availablePermits()).toBe(3);
    expect(await semaphore.release(['no-such-permit'])).toBe(false);
    expect(await semaphore.addPermits(-1)).toBe(2);
  });

  it('gives the permits of an ended lease back, and wakes a waiter at the lease end without a release', async () => {
    const semaphore = newClient().permitExpirableSemaphore(freshName());
    await semaphore.trySetPermits(1);
    const forgotten = await semaphore.tryAcquire({ leaseMs: 400 }); // never released
    const start = Date.now();
    const next = await newClient().permitExpirableSemaphore(semaphore.name).tryAcquire({ waitMs: 5_000, leaseMs: 5_000 });
    expect(next).not.toBeNull();
    expect(Date.now() - start).toBeLessThan(1_000); // lease end, not the 10 s poll
    expect(forgotten!.signal.aborted).toBe(true);
    expect(forgotten!.signal.reason).toBeInstanceOf(LockLostError);
    expect(await forgotten!.release()).toBe(false);
    expect(await next!.release()).toBe(true);
  });

  it('keeps permits past their lease while the holder lives (watchdog), and stops on release', async () => {
    // A lease of 1 s, renewed every third of it: a busy machine's scheduling pause cannot lose it
    // (a 300 ms lease was lost by any pause over 200 ms).
    const client = newClient({ defaultLeaseMs: 1_000 });
    const semaphore = client.permitExpirableSemaphore(freshName());
    await semaphore.trySetPermits(1);
    const lease = await semaphore.acquire();
    await sleep(2_000); // two leases: only renewals keep it
    expect(lease.signal.aborted).toBe(false);
    expect(await semaphore.availablePermits()).toBe(0);
    await lease.release();
    expect(await semaphore.availablePermits()).toBe(1);
  });
});
