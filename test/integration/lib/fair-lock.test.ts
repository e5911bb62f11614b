import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { LockClient, LockNotHeldError, fairQueueKey, fairWaitersKey, lockKey, type LockHandle } from '../../../src/lib/lock/index.js';
import { killFixtures, runFixture, type Fixture } from '../../../kit/children.js';
import { connectRedis, deleteKeys, uniquePrefix } from '../../support/redis.js';

const rootPrefix = uniquePrefix('fair-lock');
let testNumber = 0;
const redisClients: Redis[] = [];
const lockClients: LockClient[] = [];

/** A Redis client and a LockClient under a prefix of this test's own (fixtures use fixed names inside it). */
function world(options: ConstructorParameters<typeof LockClient>[1] = {}): { prefix: string; redis: Redis; locks: LockClient } {
  const prefix = `${rootPrefix}${++testNumber}:`;
  const redis = connectRedis(prefix);
  redisClients.push(redis);
  const locks = new LockClient(redis, options);
  lockClients.push(locks);
  return { prefix, redis, locks };
}

const waiterFixture = new URL('./fixtures/fair-waiter.ts', import.meta.url);

/** Starts a fixture that queues for `name` and resolves once Redis shows it in the queue. */
async function queuedChild(redis: Redis, prefix: string, name: string, id: string, holdMs: number, waiterLeaseMs = 1_000): Promise<Fixture> {
  const before = await redis.llen(fairQueueKey(name));
  const child = runFixture(waiterFixture, [prefix, name, id, String(holdMs), '1500', String(waiterLeaseMs)]);
  await expect.poll(() => redis.llen(fairQueueKey(name)), { timeout: 20_000, interval: 20 }).toBe(before + 1);
  return child;
}

/** Until `done` settles, grabs `name` with non-waiting tryLocks every 2 ms; returns how often it got it. */
async function barge(locks: LockClient, name: string, done: Promise<unknown>): Promise<number> {
  let finished = false;
  void done.finally(() => (finished = true)).catch(() => undefined);
  let wins = 0;
  while (!finished) {
    const handle = await locks.runInContext(() => locks.fairLock(name).tryLock({ leaseMs: 5_000 }));
    if (handle) {
      wins++;
      await handle.release();
    }
    await sleep(2);
  }
  return wins;
}

afterEach(async () => {
  killFixtures();
  await Promise.all(lockClients.splice(0).map((locks) => locks.close()));
});

afterAll(async () => {
  for (const redis of redisClients) redis.disconnect();
  await deleteKeys(rootPrefix);
});

describe('fair lock', () => {
  it('excludes, re-enters per async context, fences, and leaves no key behind', async () => {
    const { redis, locks } = world();
    const lock = locks.fairLock('res');
    await locks.runInContext(async () => {
      const outer = await lock.lock({ leaseMs: 10_000 });
      const inner = await lock.lock({ leaseMs: 10_000 });
      expect(inner.fencingToken).toBe(outer.fencingToken);
      expect(await redis.hvals(lockKey('res'))).toEqual(['2']);
      expect(await lock.holdCount()).toBe(2);
      // Another owner (a new context) neither gets it nor, with waitMs 0, joins the queue.
      expect(await locks.runInContext(() => lock.tryLock())).toBeNull();
      expect(await redis.exists(fairQueueKey('res'))).toBe(0);
      await lock.unlock();
      expect(await lock.isLocked()).toBe(true);
      await lock.unlock();
      await expect(lock.unlock()).rejects.toBeInstanceOf(LockNotHeldError);
    });
    const next = await locks.fairLock('res').tryLock();
    expect(next!.fencingToken).toBeGreaterThan(0n);
    await next!.release();
    expect(await redis.exists(lockKey('res'), fairQueueKey('res'), fairWaitersKey('res'))).toBe(0);
  });

  it('grants waiters of one process in arrival order, waking each by its own channel', async () => {
    const { redis, locks } = world({ pollMs: 10_000 }); // a poll would take 10 s: only wake-ups count
    const holder = await locks.fairLock('fifo').lock({ leaseMs: 20_000 });
    const order: number[] = [];
    const waiters: Array<Promise<void>> = [];
    let lastServed!: () => void;
    const allServed = new Promise<void>((resolve) => (lastServed = resolve));
    for (let i = 0; i < 8; i++) {
      waiters.push(
        locks.runInContext(async () => {
          const handle = await locks.fairLock('fifo').lock({ waitMs: 10_000, leaseMs: 5_000 });
          order.push(i);
          if (order.length === 8) lastServed();
          await handle.release();
        }),
      );
      await expect.poll(() => redis.llen(fairQueueKey('fifo')), { interval: 5 }).toBe(i + 1);
    }
    const releasedAt = Date.now();
    await holder.release();
    // A newcomer that never queues gets nothing while anyone waits.
    expect(await barge(locks, 'fifo', allServed)).toBe(0);
    await Promise.all(waiters);
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(Date.now() - releasedAt).toBeLessThan(2_000);
    expect(await redis.exists(fairQueueKey('fifo'), fairWaitersKey('fifo'))).toBe(0);
  });

  it('grants waiters in five OS processes in the order they queued', async () => {
    const { prefix, redis, locks } = world();
    const holder = await locks.fairLock('fifo').lock({ leaseMs: 30_000 });
    const children: Fixture[] = [];
    for (let id = 0; id < 5; id++) children.push(await queuedChild(redis, prefix, 'fifo', String(id), 30, 5_000));
    // A newcomer of this process queues behind them, and never jumps the queue.
    const newcomer = locks.runInContext(() => locks.fairLock('fifo').lock({ waitMs: 20_000, leaseMs: 5_000 }));
    await expect.poll(() => redis.llen(fairQueueKey('fifo')), { interval: 5 }).toBe(6);
    await holder.release();
    expect(await barge(locks, 'fifo', newcomer)).toBe(0); // nobody jumps the queue
    await Promise.all(children.map((child) => child.exited));
    const last = await newcomer;
    expect(await redis.lrange('order', 0, -1)).toEqual(['0', '1', '2', '3', '4']);
    await last.release();
  });

  it('skips a waiter killed in the queue within its waiter lease, and it never blocks the queue', async () => {
    const { prefix, redis, locks } = world();
    const waiterLeaseMs = 1_000;
    const holder = await locks.fairLock('dead').lock({ leaseMs: 30_000 });
    const doomed = await queuedChild(redis, prefix, 'dead', 'doomed', 30, waiterLeaseMs);
    const alive = await queuedChild(redis, prefix, 'dead', 'alive', 30, waiterLeaseMs);
    doomed.child.kill('SIGKILL');
    const killedAt = Date.now();
    await holder.release();
    // Free, but the dead waiter is at the head: nobody may jump it, not even a non-waiting try.
    expect(await locks.fairLock('dead').tryLock()).toBeNull();
    await alive.waitForLine(/^acquired alive$/, 10_000);
    const skippedAfterMs = Date.now() - killedAt;
    await alive.exited;
    expect(skippedAfterMs).toBeLessThan(waiterLeaseMs + 1_500); // one waiter lease, plus scheduling slack
    expect(await redis.lrange('order', 0, -1)).toEqual(['alive']);
    expect(await redis.exists(fairQueueKey('dead'))).toBe(0);
  });

  it('frees the lock of a holder killed with SIGKILL within one lease (watchdog, then nothing)', async () => {
    const { prefix, redis, locks } = world({ pollMs: 10_000 });
    const holder = runFixture(waiterFixture, [prefix, 'held', 'holder', '-1', '1500', '1000']);
    await holder.waitForLine(/^acquired holder$/);
    await sleep(3_000); // twice the lease: only renewals keep it
    expect(await redis.exists(lockKey('held'))).toBe(1);
    const waiting = locks.fairLock('held').tryLock({ waitMs: 10_000, leaseMs: 5_000 });
    holder.child.kill('SIGKILL');
    const killedAt = Date.now();
    const handle = await waiting;
    expect(handle).not.toBeNull();
    expect(Date.now() - killedAt).toBeLessThan(1_500 + 1_000);
    await handle!.release();
  });

  it('leaves the queue at once on timeout and on abort, so it never delays the waiters behind', async () => {
    const { redis, locks } = world({ pollMs: 10_000 });
    const holder = await locks.fairLock('leave').lock({ leaseMs: 20_000 });
    expect(await locks.runInContext(() => locks.fairLock('leave').tryLock({ waitMs: 200 }))).toBeNull();
    expect(await redis.llen(fairQueueKey('leave'))).toBe(0);

    const controller = new AbortController();
    const aborted = locks.runInContext(() => locks.fairLock('leave').lock({ signal: controller.signal }));
    await expect.poll(() => redis.llen(fairQueueKey('leave')), { interval: 5 }).toBe(1);
    const next = locks.runInContext(() => locks.fairLock('leave').lock({ waitMs: 10_000, leaseMs: 5_000 }));
    await expect.poll(() => redis.llen(fairQueueKey('leave')), { interval: 5 }).toBe(2);
    controller.abort(new Error('caller gave up'));
    await expect(aborted).rejects.toThrow('caller gave up');
    expect(await redis.zcard(fairWaitersKey('leave'))).toBe(1);
    const releasedAt = Date.now();
    await holder.release();
    const handle: LockHandle = await next;
    expect(Date.now() - releasedAt).toBeLessThan(1_000); // the new head was woken, not left to a 10 s poll
    expect(await redis.lrange(fairQueueKey('leave'), 0, -1)).toEqual([]);
    await handle.release();
  });

  it('keeps a live waiter queued across many waiter leases (it refreshes its entry)', async () => {
    const { redis, locks } = world({ pollMs: 10_000 });
    const holder = await locks.fairLock('long').lock({ leaseMs: 20_000 });
    const waiter = locks.runInContext(() => locks.fairLock('long', { waiterLeaseMs: 300 }).lock({ waitMs: 10_000, leaseMs: 5_000 }));
    await sleep(1_500); // five waiter leases
    expect(await redis.llen(fairQueueKey('long'))).toBe(1);
    await holder.release();
    await (await waiter).release();
  });

  it('re-queues a waiter whose queue entry vanished (the queue key lost apart from its liveness set)', async () => {
    const { redis, locks } = world({ pollMs: 10_000 });
    const holder = await locks.fairLock('lost').lock({ leaseMs: 20_000 });
    const waiter = locks.runInContext(() => locks.fairLock('lost', { waiterLeaseMs: 300 }).lock({ waitMs: 10_000, leaseMs: 5_000 }));
    await expect.poll(() => redis.llen(fairQueueKey('lost')), { interval: 5 }).toBe(1);
    await redis.del(fairQueueKey('lost'));
    await expect.poll(() => redis.llen(fairQueueKey('lost')), { interval: 20, timeout: 2_000 }).toBe(1);
    await holder.release();
    await (await waiter).release();
  });

  it('rejects names that would move the Cluster hash tag', () => {
    const { locks } = world();
    expect(() => locks.fairLock('a{b}')).toThrow(TypeError);
    expect(() => locks.fairLock('x', { waiterLeaseMs: 0 })).toThrow(RangeError);
  });
});
