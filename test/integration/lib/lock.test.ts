import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  LockClient,
  LockClientClosedError,
  LockLostError,
  LockNotHeldError,
  LockReentryError,
  LockTimeoutError,
  fenceKey,
  lockKey,
  type LockHandle,
} from '../../../src/lib/lock/index.js';
import { connectRedis, deleteKeys, uniquePrefix } from '../../support/redis.js';
import { expectWaiterWokenByRelease } from './wake.js';

const keyPrefix = uniquePrefix('lock');
let redis: Redis;
let admin: Redis; // same prefix, used to inspect and tamper with Redis like an outsider
const clients: LockClient[] = [];
let nameCounter = 0;

/** A lock name no other test uses. */
const freshName = (): string => `res-${++nameCounter}`;

function newClient(options: ConstructorParameters<typeof LockClient>[1] = {}): LockClient {
  const client = new LockClient(redis, options);
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

/** Resolves when the signal aborts, with the time it took. */
function abortedWithin(signal: AbortSignal, ms: number): Promise<number> {
  const start = Date.now();
  return new Promise((resolve, reject) => {
    if (signal.aborted) return resolve(0);
    const timer = setTimeout(() => reject(new Error(`signal not aborted within ${ms} ms`)), ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve(Date.now() - start);
    });
  });
}

describe('simple lock', () => {
  it('excludes a second acquisition until released (SET NX PX with a token)', async () => {
    const locks = newClient();
    const name = freshName();
    const first = await locks.simpleLock(name).tryLock({ leaseMs: 10_000 });
    expect(first).not.toBeNull();
    expect(await admin.type(lockKey(name))).toBe('string');
    expect(await admin.pttl(lockKey(name))).toBeGreaterThan(9_000);
    expect(await locks.simpleLock(name).tryLock({ leaseMs: 10_000 })).toBeNull();

    expect(await first!.release()).toBe(true);
    expect(await first!.release()).toBe(false); // idempotent
    const second = await locks.simpleLock(name).tryLock({ leaseMs: 10_000 });
    expect(second).not.toBeNull();
    expect(second!.fencingToken).toBeGreaterThan(first!.fencingToken);
    await second!.release();
  });

  it('never lets a holder whose lease expired delete the next holder lock', async () => {
    const locks = newClient();
    const name = freshName();
    const stale = await locks.simpleLock(name).tryLock({ leaseMs: 150 });
    await abortedWithin(stale!.signal, 2_000); // told that its lease ran out
    expect(stale!.signal.reason).toBeInstanceOf(LockLostError);
    await sleep(100);
    const current = await locks.simpleLock(name).tryLock({ leaseMs: 10_000 });
    expect(current).not.toBeNull();

    expect(await stale!.release()).toBe(false);
    expect(await locks.simpleLock(name).isLocked()).toBe(true);
    expect(current!.signal.aborted).toBe(false);
    await current!.release();
  });

  it('is not reentrant: the same async context gets null from a try without wait', async () => {
    const locks = newClient();
    const name = freshName();
    await locks.runInContext(async () => {
      const outer = await locks.simpleLock(name).tryLock({ leaseMs: 10_000 });
      expect(await locks.simpleLock(name).tryLock({ leaseMs: 10_000 })).toBeNull();
      await outer!.release();
    });
  });

  it('throws LockReentryError when its holder would wait for it (instead of deadlocking), other contexts still wait', async () => {
    const locks = newClient();
    const name = freshName();
    await locks.runInContext(async () => {
      const outer = await locks.simpleLock(name).lock({ leaseMs: 10_000 });
      const start = Date.now();
      const nested = locks.simpleLock(name).lock(); // default wait: Infinity
      await expect(nested).rejects.toBeInstanceOf(LockReentryError);
      await expect(locks.simpleLock(name).tryLock({ waitMs: 1_000 })).rejects.toThrow(`Simple lock "${name}"`);
      expect(Date.now() - start).toBeLessThan(500);
      // Another logical operation waits as usual, and gets it once released.
      const other = locks.runInContext(() => locks.simpleLock(name).tryLock({ waitMs: 5_000, leaseMs: 5_000 }));
      await sleep(100);
      await outer.release();
      const handle = await other;
      expect(handle).not.toBeNull();
      // Once released, the first context may take it again.
      await handle!.release();
      await (await locks.simpleLock(name).lock({ waitMs: 1_000 })).release();
    });
  });

  it('takes leases longer than Node timers allow (2^31 - 1 ms), without losing the lock at once', async () => {
    const locks = newClient();
    const name = freshName();
    const leaseMs = 2 ** 31 + 60_000;
    const handle = await locks.simpleLock(name).lock({ leaseMs });
    expect(await admin.pttl(lockKey(name))).toBeGreaterThan(2 ** 31);
    await sleep(100);
    expect(handle.signal.aborted).toBe(false);
    expect(await handle.release()).toBe(true);

    const watched = newClient({ defaultLeaseMs: 2 ** 33 }); // watchdog period lease/3 > 2^31 too
    const reentrant = await watched.lock(name).lock();
    expect(await admin.pttl(lockKey(name))).toBeGreaterThan(2 ** 32);
    await sleep(100);
    expect(reentrant.signal.aborted).toBe(false);
    expect(await reentrant.release()).toBe(true);
  });

  it('rejects names that would break the Cluster hash tag, and impossible durations', async () => {
    const locks = newClient();
    for (const bad of ['', 'a{b', 'a}b']) expect(() => locks.simpleLock(bad), bad).toThrow(TypeError);
    await expect(locks.simpleLock('ok').tryLock({ leaseMs: 0 })).rejects.toThrow(RangeError);
    await expect(locks.lock('ok').tryLock({ waitMs: -1 })).rejects.toThrow(RangeError);
    expect(() => new LockClient(redis, { defaultLeaseMs: 1.5 })).toThrow(RangeError);
  });
});

describe('reentrant lock', () => {
  it('re-enters within one async context across awaits, counting holds', async () => {
    const locks = newClient();
    const name = freshName();
    await locks.withLock(name, async (outer) => {
      await sleep(5);
      await locks.withLock(name, async (inner) => {
        expect(inner.fencingToken).toBe(outer.fencingToken); // one hold, one token
        expect(await admin.hvals(lockKey(name))).toEqual(['2']);
        expect(await locks.lock(name).holdCount()).toBe(2);
      });
      expect(await locks.lock(name).holdCount()).toBe(1);
      expect(await locks.lock(name).isHeldByCurrentContext()).toBe(true);
    });
    expect(await admin.exists(lockKey(name))).toBe(0);
  });

  it('never shares an owner between two concurrent operations (contexts)', async () => {
    const locks = newClient();
    const name = freshName();
    let release!: () => void;
    const holding = new Promise<void>((resolve) => (release = resolve));
    const first = locks.withLock(name, () => holding);
    await expect.poll(() => locks.lock(name).isLocked()).toBe(true); // the first operation holds it
    const second = await locks.runInContext(() => locks.lock(name).tryLock({ waitMs: 0 }));
    expect(second).toBeNull();
    // Outside any context every acquisition is its own owner too.
    expect(await locks.lock(name).tryLock()).toBeNull();
    expect(await locks.runInContext(() => locks.lock(name).isHeldByCurrentContext())).toBe(false);
    release();
    await first;
  });

  it('refuses unlock() from a context that does not hold the lock', async () => {
    const locks = newClient();
    const name = freshName();
    await locks.runInContext(async () => {
      await locks.lock(name).lock();
      await expect(locks.runInContext(() => locks.lock(name).unlock())).rejects.toBeInstanceOf(LockNotHeldError);
      expect(await locks.lock(name).isLocked()).toBe(true);
      await locks.lock(name).unlock(); // the holder's own context
    });
    expect(await admin.exists(lockKey(name))).toBe(0);
    // Outside any context there is no owner to unlock for: release through the handle.
    const handle = await locks.lock(name).lock();
    await expect(locks.lock(name).unlock()).rejects.toBeInstanceOf(LockNotHeldError);
    expect(await handle.release()).toBe(true);
  });

  it('refuses a release by an owner that no longer holds it', async () => {
    const locks = newClient();
    const name = freshName();
    const stale = await locks.lock(name).tryLock({ leaseMs: 150 });
    await sleep(250);
    const current = await locks.lock(name).tryLock({ leaseMs: 10_000 });
    expect(current).not.toBeNull();
    expect(await stale!.release()).toBe(false);
    expect(await admin.hvals(lockKey(name))).toEqual(['1']);
    await current!.release();
  });

  it('stays consistent when re-entries and releases of one context overlap', async () => {
    const locks = newClient({ defaultLeaseMs: 1_000 });
    const name = freshName();
    await locks.runInContext(async () => {
      const outer = await locks.lock(name).lock();
      await Promise.all(
        Array.from({ length: 20 }, async () => {
          const inner = await locks.lock(name).lock();
          await sleep(Math.random() * 5);
          expect(await inner.release()).toBe(true);
        }),
      );
      expect(await locks.lock(name).holdCount()).toBe(1);
      // The last release and a new acquisition race: whichever Redis runs first, the new hold
      // must keep its watchdog (lease 1 s, so 2 s without renewals would lose it; renewed every
      // third of a lease, a busy machine's scheduling pause does not).
      const [, again] = await Promise.all([outer.release(), locks.lock(name).lock()]); // release first
      const [reentered] = await Promise.all([locks.lock(name).lock(), again.release()]); // re-entry first
      await sleep(2_000);
      expect(await locks.lock(name).holdCount()).toBe(1);
      expect(reentered.signal.aborted).toBe(false);
      expect(await reentered.release()).toBe(true);
    });
    expect(await admin.exists(lockKey(name))).toBe(0);
  });

  it('always releases in withLock, also when fn throws', async () => {
    const locks = newClient();
    const name = freshName();
    await expect(locks.withLock(name, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await admin.exists(lockKey(name))).toBe(0);
    expect(await locks.withLock(name, () => 42)).toBe(42);
    expect(await admin.exists(lockKey(name))).toBe(0);
  });
});

describe('fencing tokens', () => {
  it('strictly increase across holds, lock kinds and clients, even after the fence key is lost', async () => {
    const a = newClient();
    const b = newClient();
    const name = freshName();
    const tokens: bigint[] = [];
    for (const locks of [a, b, a, b]) {
      await locks.withLock(name, (handle) => void tokens.push(handle.fencingToken), { leaseMs: 5_000 });
      const simple = await locks.simpleLock(name).lock({ leaseMs: 5_000 });
      tokens.push(simple.fencingToken);
      await simple.release();
    }
    await admin.del(fenceKey(name)); // expired or lost in a failover
    const afterLoss = await a.simpleLock(name).lock({ leaseMs: 5_000 });
    tokens.push(afterLoss.fencingToken);
    await afterLoss.release();

    for (let i = 1; i < tokens.length; i++) expect(tokens[i]!).toBeGreaterThan(tokens[i - 1]!);
    expect(await admin.pttl(fenceKey(name))).toBeGreaterThan(24 * 3600_000); // expires, eventually
  });
});

describe('watchdog', () => {
  it('keeps a lock three times past its lease while the holder lives, and stops on release', async () => {
    const locks = newClient({ defaultLeaseMs: 1_000 });
    const names = [freshName(), freshName()];
    const handles = [await locks.lock(names[0]!).lock(), await locks.simpleLock(names[1]!).lock()];
    await sleep(3_100);
    for (const [i, name] of names.entries()) {
      expect(await admin.exists(lockKey(name))).toBe(1);
      expect(await admin.pttl(lockKey(name))).toBeLessThanOrEqual(1_000);
      expect(handles[i]!.signal.aborted).toBe(false);
      expect(await handles[i]!.release()).toBe(true);
    }
    await sleep(500); // a renewal would be due by now
    for (const [i, name] of names.entries()) {
      expect(await admin.exists(lockKey(name))).toBe(0);
      expect(handles[i]!.signal.aborted).toBe(false); // release is not a loss
    }
  });

  it('tells the holder when the lock is found lost', async () => {
    const locks = newClient({ defaultLeaseMs: 600 });
    const names = [freshName(), freshName()];
    const handles = [await locks.lock(names[0]!).lock(), await locks.simpleLock(names[1]!).lock()];
    await admin.del(names.map(lockKey)); // e.g. a failover to a replica that never saw the locks
    for (const handle of handles) {
      const tookMs = await abortedWithin(handle.signal, 3_000);
      expect(tookMs).toBeLessThan(1_500);
      expect(handle.signal.reason).toBeInstanceOf(LockLostError);
      expect(await handle.release()).toBe(false);
    }
  });

  it('aborts the signal of a fixed lease when the lease runs out', async () => {
    const locks = newClient();
    const handle = await locks.lock(freshName()).lock({ leaseMs: 300 });
    const tookMs = await abortedWithin(handle.signal, 3_000);
    expect(tookMs).toBeGreaterThan(200);
    expect((handle.signal.reason as LockLostError).why).toBe('lease expired');
  });
});

describe('waiting', () => {
  it('wakes a waiter on release much sooner than the poll interval', async () => {
    const locks = newClient({ pollMs: 10_000 });
    const name = freshName();
    await expectWaiterWokenByRelease(locks.lock(name), locks.lock(name));
  });

  it('uses one subscription per lock name for all waiters of the process, and serves them in turn', async () => {
    const locks = newClient({ pollMs: 10_000 });
    const name = freshName();
    const channel = `${keyPrefix}lock-channel:{${name}}`;
    const holder = await locks.lock(name).lock({ leaseMs: 20_000 });
    const order: number[] = [];
    const waiters = [1, 2, 3].map((n) =>
      locks.runInContext(async () => {
        const handle = await locks.lock(name).lock({ waitMs: 8_000, leaseMs: 5_000 });
        order.push(n);
        await sleep(20);
        await handle.release();
      }),
    );
    const subscribers = async (): Promise<number> => ((await admin.pubsub('NUMSUB', channel)) as [string, number])[1];
    await expect.poll(subscribers, { timeout: 3_000 }).toBe(1);
    await sleep(100); // all three are waiting now; still one subscription
    expect(await subscribers()).toBe(1);

    const start = Date.now();
    await holder.release();
    await Promise.all(waiters);
    expect(order.sort()).toEqual([1, 2, 3]);
    expect(Date.now() - start).toBeLessThan(3_000); // three hand-overs, no poll interval
    await expect.poll(subscribers, { timeout: 3_000 }).toBe(0); // dropped with the last waiter
  });

  it('falls back to the holder lease when no release is published (holder died)', async () => {
    const locks = newClient({ pollMs: 10_000 });
    const name = freshName();
    await locks.lock(name).tryLock({ leaseMs: 400 }); // never released
    const start = Date.now();
    const handle = await locks.lock(name).tryLock({ waitMs: 5_000, leaseMs: 5_000 });
    expect(handle).not.toBeNull();
    expect(Date.now() - start).toBeLessThan(2_000);
    await handle!.release();
  });

  it('times out with LockTimeoutError, and gives up on abort', async () => {
    const locks = newClient();
    const name = freshName();
    const holder = await locks.lock(name).lock({ leaseMs: 10_000 });
    await expect(locks.lock(name).lock({ waitMs: 200 })).rejects.toBeInstanceOf(LockTimeoutError);
    expect(await locks.lock(name).tryLock({ waitMs: 200 })).toBeNull();
    const controller = new AbortController();
    const waiting = locks.lock(name).lock({ signal: controller.signal });
    setTimeout(() => controller.abort(new Error('client went away')), 100);
    await expect(waiting).rejects.toThrow('client went away');
    await holder.release();
  });

  it('close() tells holders and rejects waiters', async () => {
    const locks = new LockClient(redis);
    const name = freshName();
    const holder: LockHandle = await locks.lock(name).lock();
    const waiting = locks.lock(name).lock({ waitMs: 10_000 });
    const rejected = expect(waiting).rejects.toBeInstanceOf(LockClientClosedError);
    await sleep(100);
    await locks.close();
    await rejected;
    expect(holder.signal.reason).toBeInstanceOf(LockLostError);
    await expect(locks.lock(name).tryLock()).rejects.toBeInstanceOf(LockClientClosedError);
    await admin.del(lockKey(name));
  });
});

describe('observer', () => {
  it('reports every acquisition with its outcome and wait, and survives an observer that throws', async () => {
    const events: Array<{ name: string; kind: string; outcome: string; waitedMs: number }> = [];
    const watched = newClient({ observer: { onAcquire: (event) => events.push(event) } });
    const other = newClient();
    const name = freshName();

    const held = await other.simpleLock(name).lock();
    expect(await watched.simpleLock(name).tryLock()).toBeNull();
    expect(await watched.simpleLock(name).tryLock({ waitMs: 150 })).toBeNull();
    const waiting = watched.simpleLock(name).lock({ waitMs: 5_000 });
    await sleep(100);
    await held.release();
    const handle = await waiting;
    await handle.release();
    await watched.withLock(freshName(), () => undefined);

    expect(events.map(({ kind, outcome }) => `${kind}:${outcome}`)).toEqual(['simple:busy', 'simple:timeout', 'simple:acquired', 'reentrant:acquired']);
    expect(events.every((event) => event.name === name || event.kind === 'reentrant')).toBe(true);
    expect(events[1]!.waitedMs).toBeGreaterThanOrEqual(140);
    expect(events[2]!.waitedMs).toBeGreaterThanOrEqual(90);
    expect(events[3]!.waitedMs).toBeLessThan(1_000);

    const throwing = newClient({
      observer: {
        onAcquire: () => {
          throw new Error('observer bug');
        },
      },
    });
    const lock = await throwing.lock(freshName()).lock();
    expect(lock.fencingToken).toBeGreaterThan(0n);
    await lock.release();
  });
});
