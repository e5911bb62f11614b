import { assertDuration, MAX_LEASE_MS } from './engine.js';
import { LockLostError, LockTimeoutError } from './errors.js';
import { driftMs } from './hold.js';
import { runHolding } from './lock-client.js';
import { setLongTimeout, TIMED_OUT, within, type LongTimer } from './timers.js';
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
    assertDuration('waitMs', waitMs, { allowInfinity: true, max: MAX_LEASE_MS });
    if (leaseMs !== undefined) assertDuration('leaseMs', leaseMs, { min: 1, max: MAX_LEASE_MS });
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
    const slots = await Promise.all(this.locks.map((lock) => tryOnce(lock, leaseMs, timeoutMs)));
    const handles = slots.filter((handle): handle is LockHandle => handle !== null);
    const validityMs = Math.floor(lease - (now() - start) - driftMs(lease));
    if (handles.length >= this.quorum && validityMs > 0) {
      return new CombinedHold(this.locks, slots, this.quorum, this.label, timeoutMs).start(validityMs, leaseMs, lease);
    }
    await releaseAll(handles, timeoutMs);
    return null;
  }
}

/**
 * The locks of one MultiLock/RedLock acquisition. When fewer than the quorum are still held, the
 * whole hold is lost: its signal aborts and the locks still held are released at once, so no
 * watchdog keeps renewing a minority that protects nothing. With watchdogs (no fixed lease), a
 * lock lost while the quorum still holds (a RedLock server restarted empty, or down when the
 * hold began) is taken again on that server at each watchdog period, so a long hold survives a
 * rolling restart of all the servers, one at a time.
 */
class CombinedHold implements MultiLockHandle {
  private readonly controller = new AbortController();
  private readonly retrying = new Set<number>();
  private timer: LongTimer | undefined;
  private ended = false;
  /** Watchdog mode with fewer locks needed than given (RedLock): lost locks are retaken. */
  private retaking = false;
  /** Longest wait for the renewals that confirm the quorum: a watchdog period (set by start). */
  private confirmTimeoutMs = 0;

  constructor(
    private readonly locks: readonly Lock[],
    /** Per lock: the handle of its current hold, or null. */
    private readonly slots: Array<LockHandle | null>,
    private readonly quorum: number,
    private readonly label: string,
    private readonly timeoutMs: number,
  ) {}

  validityMs = 0;

  get handles(): readonly LockHandle[] {
    return this.slots.filter((handle): handle is LockHandle => handle !== null && !handle.signal.aborted);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  start(validityMs: number, leaseMs: number | undefined, lease: number): this {
    this.validityMs = validityMs;
    for (const handle of this.handles) handle.signal.addEventListener('abort', this.onSubLockLost);
    if (leaseMs !== undefined) {
      // With a fixed lease nothing renews the locks: the validity time is all there is.
      this.timer = setLongTimeout(() => this.lose('validity time over'), validityMs);
    } else if (this.quorum < this.locks.length) {
      this.retaking = true;
      this.confirmTimeoutMs = Math.max(this.timeoutMs, Math.floor(lease / 3));
      this.scheduleRetake(Math.max(1, Math.floor(lease / 3)));
    }
    this.onSubLockLost(); // a lock may have been lost while the others were acquired
    return this;
  }

  release(): Promise<boolean> {
    this.end();
    return releaseAll(
      this.slots.filter((handle) => handle !== null),
      this.timeoutMs,
    );
  }

  private readonly onSubLockLost = (): void => {
    const held = this.handles.length;
    if (held < this.quorum) this.lose(`only ${held} of ${this.locks.length} locks still held`);
    else if (this.retaking) void this.confirmQuorum();
  };

  /**
   * Renews every lock still believed held, now: a lock found lost may not be the only one (two
   * servers restarted together), and retaking one while the quorum is in fact gone would hide
   * that another client may have held the majority meanwhile. True if the quorum is confirmed.
   */
  private async confirmQuorum(): Promise<boolean> {
    const answers = await Promise.all(this.handles.map((handle) => within(handle.renew?.() ?? Promise.resolve(true), this.confirmTimeoutMs)));
    const confirmed = answers.filter((answer) => answer === true).length;
    if (this.ended) return false;
    if (confirmed >= this.quorum) return true;
    this.lose(`only ${confirmed} of ${this.locks.length} locks confirmed after one was lost`);
    return false;
  }

  private lose(why: string): void {
    if (this.ended) return;
    this.controller.abort(new LockLostError(this.label, why));
    const stillHeld = this.handles;
    this.end();
    void releaseAll(stillHeld, this.timeoutMs);
  }

  private end(): void {
    this.ended = true;
    this.timer?.cancel();
    for (const handle of this.slots) handle?.signal.removeEventListener('abort', this.onSubLockLost);
  }

  private scheduleRetake(periodMs: number): void {
    this.timer = setLongTimeout(() => {
      void this.retakeLost().finally(() => {
        if (!this.ended) this.scheduleRetake(periodMs);
      });
    }, periodMs);
  }

  private async retakeLost(): Promise<void> {
    const lost = [...this.slots.keys()].filter((index) => this.slots[index] === null || this.slots[index]!.signal.aborted);
    if (lost.length === 0 || !(await this.confirmQuorum())) return;
    await Promise.all(lost.map((index) => this.retake(index)));
  }

  private async retake(index: number): Promise<void> {
    if (this.retrying.has(index)) return;
    this.retrying.add(index);
    try {
      const handle = await tryOnce(this.locks[index]!, undefined, this.timeoutMs);
      if (!handle) return;
      if (this.ended) {
        await handle.release().catch(() => undefined);
        return;
      }
      this.slots[index] = handle;
      handle.signal.addEventListener('abort', this.onSubLockLost);
    } finally {
      this.retrying.delete(index);
    }
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
