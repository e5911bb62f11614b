import { randomUUID } from 'node:crypto';
import { runInNewContext, runInSomeContext } from './context.js';
import { assertDuration, LockEngine, MAX_LEASE_MS } from './engine.js';
import { FairLock, type FairLockOptions } from './fair-lock.js';
import { ReadWriteLock } from './read-write-lock.js';
import { ReentrantLock, SimpleLock } from './redis-lock.js';
import { CountDownLatch } from './count-down-latch.js';
import { PermitExpirableSemaphore } from './permit-expirable-semaphore.js';
import { Semaphore } from './semaphore.js';
import type { LockHandle, LockObserver, RedisClient, TryLockOptions } from './types.js';

export interface LockClientOptions {
  /** Names this process in the lock values (for debugging). Default: a random UUID. */
  instanceId?: string;
  /** Lease when `leaseMs` is not given; the watchdog renews it every third of it. Default 30 000. */
  defaultLeaseMs?: number;
  /**
   * Longest sleep of a waiter between two attempts when no release notification arrives
   * (a lost pub/sub message, a holder that died). Default 1 000.
   */
  pollMs?: number;
  /** Told of every acquisition attempt and how long it waited (e.g. a Prometheus histogram). */
  observer?: LockObserver;
}

/**
 * Entry point of the distributed locks on one Redis (standalone or Cluster): creates lock
 * objects, runs code under a lock, and owns the one subscriber connection and the watchdogs.
 */
export class LockClient {
  private readonly engine: LockEngine;

  constructor(redis: RedisClient, options: LockClientOptions = {}) {
    const { instanceId = randomUUID(), defaultLeaseMs = 30_000, pollMs = 1_000 } = options;
    assertDuration('defaultLeaseMs', defaultLeaseMs, { min: 3, max: MAX_LEASE_MS }); // the watchdog renews every third
    assertDuration('pollMs', pollMs, { min: 1 });
    this.engine = new LockEngine(redis, instanceId, defaultLeaseMs, pollMs, options.observer);
  }

  get instanceId(): string {
    return this.engine.instanceId;
  }

  /** A reentrant lock (Redisson's RLock). Cheap: create one per use. */
  lock(name: string): ReentrantLock {
    return new ReentrantLock(this.engine, name);
  }

  /** A non-reentrant lock: SET NX PX with a random token, compare-and-delete release. */
  simpleLock(name: string): SimpleLock {
    return new SimpleLock(this.engine, name);
  }

  /** A reentrant lock granted in arrival order across processes (Redisson's RFairLock). */
  fairLock(name: string, options?: FairLockOptions): FairLock {
    return new FairLock(this.engine, name, options);
  }

  /** Many readers or one writer, both reentrant, with downgrade (Redisson's RReadWriteLock). */
  readWriteLock(name: string): ReadWriteLock {
    return new ReadWriteLock(this.engine, name);
  }

  /** A counting semaphore (Redisson's RSemaphore): permits without owners. */
  semaphore(name: string): Semaphore {
    return new Semaphore(this.engine, name);
  }

  /** A semaphore whose permits have ids and leases (Redisson's RPermitExpirableSemaphore). */
  permitExpirableSemaphore(name: string): PermitExpirableSemaphore {
    return new PermitExpirableSemaphore(this.engine, name);
  }

  /** A count-down latch (Redisson's RCountDownLatch). */
  countDownLatch(name: string): CountDownLatch {
    return new CountDownLatch(this.engine, name);
  }

  /**
   * Runs `fn` holding the reentrant lock `name` and always releases it, also when `fn` throws.
   * Waits up to `options.waitMs` (default Infinity; LockTimeoutError after). Runs in the current
   * async context, or a new one, so a nested withLock on the same name re-enters.
   * `fn` gets the handle: pass `handle.fencingToken` to the store, watch `handle.signal`.
   */
  withLock<T>(name: string, fn: (handle: LockHandle) => Promise<T> | T, options: TryLockOptions = {}): Promise<T> {
    return runInSomeContext(async () => runHolding(await this.lock(name).lock(options), fn));
  }

  /**
   * Runs `fn` as a new logical owner: reentrant locks taken inside (across any number of
   * awaits) re-enter; code outside never shares them. Wrap each request or job in one.
   */
  runInContext<T>(fn: () => T): T {
    return runInNewContext(fn);
  }

  /**
   * Stops all watchdogs (aborting the holders' signals: their leases will now run out), rejects
   * waiting calls with LockClientClosedError and closes the subscriber. Does not delete locks or
   * close the Redis client it was given.
   */
  close(): Promise<void> {
    return this.engine.close();
  }
}

/** Runs `fn` with `handle` and releases it whatever happens; `fn`'s error wins over a release error. */
export async function runHolding<H extends { release(): Promise<boolean> }, T>(handle: H, fn: (handle: H) => Promise<T> | T): Promise<T> {
  let result: T;
  try {
    result = await fn(handle);
  } catch (error) {
    await handle.release().catch(() => undefined);
    throw error;
  }
  await handle.release();
  return result;
}
