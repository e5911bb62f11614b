import { assertDuration } from './engine.js';
import { LockLostError, LockTimeoutError } from './errors.js';
import { driftMs } from './hold.js';
import { runHolding } from './lock-client.js';
import type { Lock, LockHandle, TryLockOptions } from './types.js';

export interface MultiLockOptions {
  /** Mean pause between two rounds (randomised ±50% so competing clients fall out of step). Default 200. */
  retryDelayMs?: number;
  /**
   * Longest wait for one lock's answer within a round, so that a dead or hung server cannot eat
   * the lease. Default: lease/20, within [50, 1000] ms.
   */
  attemptTimeoutMs?: number;
}

/** Several locks held together. */
export interface MultiLockHandle {
  /** The acquired locks' handles (each with the fencing token of its own Redis). */
  readonly handles: readonly LockHandle[];
  /**
   * Aborted (LockLostError) when fewer locks than needed are still held, or, with a fixed lease,
   * when the validity time is over.
   */
  readonly signal: AbortSignal;
  /** ms the locks were surely valid for when acquired: lease - time to acquire - clock drift allowance. */
  readonly validityMs: number;
  /** Releases every lock; false if some release was refused, failed or timed out. */
  release(): Promise<boolean>;
}

const now = (): number => performance.now();

/**
 * All-of-N lock (Redisson's RedissonMultiLock): each round tries every lock at once; unless all
 * are acquired within the validity time, the partial acquisition is rolled back and a new round
 * follows after a random pause, until `waitMs`. Taking all at once and rolling back (instead of
 * holding some while waiting for others) cannot deadlock, whatever the order of the locks.
 */
export class MultiLock {
  readonly locks: readonly Lock[];
  private readonly retryDelayMs: number;
  private readonly attemptTimeoutMs: number | undefined;
  private readonly label: string;

  constructor(locks: readonly Lock[], options: MultiLockOptions = {}) {
    if (locks.length === 0) throw new RangeError('A MultiLock needs at least one lock');
    const { retryDelayMs = 200, attemptTimeoutMs } = options;
    assertDuration('retryDelayMs', retryDelayMs);
    if (attemptTimeoutMs !== undefined) assertDuration('attemptTimeoutMs', attemptTimeoutMs);
    this.locks = [...locks];
    this.retryDelayMs = retryDelayMs;
    this.attemptTimeoutMs = attemptTimeoutMs;
    this.label = [...new Set(locks.map((lock) => lock.name))].join(',');
  }

  /** How many of the locks must be acquired. */
  get quorum(): number {
    return this.locks.length;
  }

  /** Acquires the locks, trying for up to `waitMs` (default 0: one round); null if not acquired. */
  async tryLock(options: TryLockOptions = {}): Promise<MultiLockHandle | null> {
    const { waitMs = 0, leaseMs, signal } = options;
    assertDuration('waitMs', waitMs, { allowInfinity: true });
    if (leaseMs !== undefined) assertDuration('leaseMs', leaseMs, { min: 1 });
    const deadline = now() + waitMs;
    for (;;) {
      signal?.throwIfAborted();
      const handle = await this.round(leaseMs);
      if (handle) return handle;
      const remainingMs = deadline - now();
      if (remainingMs <= 0) return null;
      await sleep(Math.min(remainingMs, this.retryDelayMs * (0.5 + Math.random())), signal);
    }
  }

  /** Like tryLock, but waits up to `waitMs` (default Infinity) and then throws LockTimeoutError. */
  async lock(options: TryLockOptions = {}): Promise<MultiLockHandle> {
    const waitMs = options.waitMs ?? Infinity;
    const handle = await this.tryLock({ ...options, waitMs });
    if (!handle) throw new LockTimeoutError(this.label, waitMs);
    return handle;
  }

  /** Runs `fn` holding the locks and always releases them, also when `fn` throws. */
  async withLock<T>(fn: (handle: MultiLockHandle) => Promise<T> | T, options: TryLockOptions = {}): Promise<T> {
    return runHolding(await this.lock(options), fn);
  }

  private async round(leaseMs: number | undefined): Promise<MultiLockHandle | null> {
    // Without leaseMs every lock runs its own watchdog; validity is that of the first lease.
    const lease = leaseMs ?? Math.min(...this.locks.map((lock) => lock.defaultLeaseMs));
    const timeoutMs = this.attemptTimeoutMs ?? Math.min(1000, Math.max(50, Math.floor(lease / 20)));
    const start = now();
    const results = await Promise.all(this.locks.map((lock) => tryOnce(lock, leaseMs, timeoutMs)));
    const handles = results.filter((handle): handle is LockHandle => handle !== null);
    const validityMs = Math.floor(lease - (now() - start) - driftMs(lease));
    if (handles.length >= this.quorum && validityMs > 0) {
      return this.combine(handles, validityMs, leaseMs !== undefined, timeoutMs);
    }
    await releaseAll(handles, timeoutMs);
    return null;
  }

  private combine(handles: LockHandle[], validityMs: number, fixedLease: boolean, timeoutMs: number): MultiLockHandle {
    const controller = new AbortController();
    const lose = (why: string): void => {
      if (!controller.signal.aborted) controller.abort(new LockLostError(this.label, why));
    };
    const onSubLockLost = (): void => {
      const held = handles.filter((handle) => !handle.signal.aborted).length;
      if (held < this.quorum) lose(`only ${held} of ${this.locks.length} locks still held`);
    };
    for (const handle of handles) handle.signal.addEventListener('abort', onSubLockLost);
    // With a fixed lease nothing renews the locks: the validity time is all there is.
    const validityTimer = fixedLease ? setTimeout(() => lose('validity time over'), validityMs).unref() : undefined;
    onSubLockLost();
    return {
      handles,
      signal: controller.signal,
      validityMs,
      release: () => {
        clearTimeout(validityTimer);
        for (const handle of handles) handle.signal.removeEventListener('abort', onSubLockLost);
        return releaseAll(handles, timeoutMs);
      },
    };
  }
}

/**
 * The Redlock algorithm: the same lock name on N independent Redis servers (each lock from its
 * own LockClient), held when a majority (N/2 + 1) was acquired within the validity time.
 * Survives the loss of a minority of servers. See README.md for what it does not guarantee.
 */
export class RedLock extends MultiLock {
  override get quorum(): number {
    return Math.floor(this.locks.length / 2) + 1;
  }
}

/** One attempt on one lock, bounded in time; a late success is released as soon as it arrives. */
async function tryOnce(lock: Lock, leaseMs: number | undefined, timeoutMs: number): Promise<LockHandle | null> {
  const attempt = lock.tryLock({ waitMs: 0, leaseMs });
  const outcome = await within(attempt, timeoutMs);
  if (outcome === TIMED_OUT) {
    attempt.then((late) => late?.release()).catch(() => undefined);
    return null;
  }
  return outcome instanceof Error ? null : outcome;
}

/** Releases all handles in parallel; true when every release was confirmed in time. */
async function releaseAll(handles: readonly LockHandle[], timeoutMs: number): Promise<boolean> {
  const outcomes = await Promise.all(handles.map((handle) => within(handle.release(), timeoutMs)));
  return outcomes.every((released) => released === true);
}

const TIMED_OUT = Symbol('timed out');

/** The promise's value, its error, or TIMED_OUT after `ms`; never rejects. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | Error | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), ms);
  });
  const settled = promise.catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
  try {
    return await Promise.race([settled, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the lock options promise a rejection with signal.reason itself, as signal.throwIfAborted() throws
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
