import type { Cluster, Redis } from 'ioredis';

/** A standalone Redis or a Redis Cluster (ioredis). */
export type RedisClient = Redis | Cluster;

export interface TryLockOptions {
  /**
   * How long to wait for the lock, in ms. `tryLock` defaults to 0 (one attempt),
   * `lock` and `withLock` to Infinity.
   */
  waitMs?: number;
  /**
   * Fixed lease in ms: the lock expires then unless released before. When omitted, the client's
   * default lease is used and a watchdog renews it every lease/3 while the holder lives.
   */
  leaseMs?: number;
  /** Gives up waiting: the call rejects with `signal.reason`. */
  signal?: AbortSignal;
}

/** One successful acquisition. */
export interface LockHandle {
  readonly name: string;
  /**
   * Strictly increasing between successive holds of this lock name (a re-entry returns the token
   * of the hold it joins). Pass it to the protected store so it can refuse writes carrying a
   * token smaller than the last one it saw: that is what stops a stale holder.
   */
  readonly fencingToken: bigint;
  /**
   * Aborted (reason: LockLostError) as soon as this process can no longer assume it holds the
   * lock: watchdog found it taken or gone, the fixed lease ran out, renewals kept failing for a
   * whole lease, or the client was closed. Not aborted by `release()`.
   */
  readonly signal: AbortSignal;
  /**
   * Releases this acquisition (one hold of a re-entered lock). Resolves to false when the lock
   * was no longer held by this owner (nothing is deleted then). Calling it twice is harmless.
   */
  release(): Promise<boolean>;
  /**
   * Renews the lease now (a watchdog hold) and says whether this owner still holds the lock: false
   * when it is lost or Redis did not answer. A fixed lease is only checked locally. Optional, for
   * locks built elsewhere; RedLock uses it to confirm its quorum after losing a lock.
   */
  renew?(): Promise<boolean>;
}

/** What all single-name locks offer; MultiLock and RedLock combine them. */
export interface Lock {
  readonly name: string;
  /** Lease used when `leaseMs` is not given (and renewed by the watchdog). */
  readonly defaultLeaseMs: number;
  /** Acquires the lock, waiting up to `waitMs` (default 0); null when not acquired in time. */
  tryLock(options?: TryLockOptions): Promise<LockHandle | null>;
  /** Like tryLock but waits up to `waitMs` (default Infinity) and throws LockTimeoutError. */
  lock(options?: TryLockOptions): Promise<LockHandle>;
  /** Whether anyone holds the lock right now. */
  isLocked(): Promise<boolean>;
}

/** One acquisition attempt as seen by a LockClient's observer (metrics, tracing). */
export interface LockWaitEvent {
  /** The lock's name as given (e.g. `order:42`); label with a bounded part of it. */
  name: string;
  kind: 'reentrant' | 'simple' | 'fair' | 'read' | 'write';
  /** `acquired`; `timeout`: waited and gave up; `busy`: held elsewhere and the caller would not wait. */
  outcome: 'acquired' | 'timeout' | 'busy';
  /** From the call until the lock was taken or given up, ms. */
  waitedMs: number;
}

/** Hooks a LockClient calls; they must not throw (an error is swallowed) and should be cheap. */
export interface LockObserver {
  onAcquire?(event: LockWaitEvent): void;
}
