import { assertDuration, MAX_LEASE_MS, type LockEngine } from './engine.js';
import { LockClientClosedError, LockNotHeldError, LockTimeoutError } from './errors.js';
import { Hold, type HoldBackend } from './hold.js';
import type { Waiter } from './release-notifier.js';
import { TIMED_OUT, within } from './timers.js';
import type { LockHandle, LockWaitEvent, TryLockOptions } from './types.js';

// The acquisition loop of the fair lock and the read-write lock: one attempt, then (if the caller
// waits) a pub/sub subscription and attempts after each notification or bounded sleep, until the
// lock is taken, waitMs is over, the signal aborts or the client closes. The same shape as
// RedisLock's loop, with hooks for what the queue and the readers need.

/** What one acquisition attempt found: a handle, or how long until the lock may change. */
export type Attempt = { handle: LockHandle } | { handle: null; retryInMs: number };

export interface WaitSpec {
  readonly kind: LockWaitEvent['kind'];
  /** Pub/sub channel (key prefix included) on which a release wakes this waiter. */
  readonly channel: string;
  /** `queued` is false for the first attempt (which must not join a queue: the caller may not wait). */
  attempt(queued: boolean): Promise<Attempt>;
  /** Longest sleep between two attempts (the client's pollMs, or less). */
  readonly sleepCapMs: number;
  /** Called once subscribed and before the first queued attempt. */
  joined?(waiter: Waiter): void;
  /** Called when waiting ended without the lock (timeout, abort, close, error): leave a queue. */
  gaveUp?(): Promise<unknown>;
  /** Called when waiting ended, either way (`acquired`: with the lock). */
  left?(waiter: Waiter, acquired: boolean): void;
}

const now = (): number => performance.now();

/** tryLock of the fair and read-write locks: null when not acquired within `waitMs` (default 0). */
export async function acquire(engine: LockEngine, name: string, spec: WaitSpec, options: TryLockOptions = {}): Promise<LockHandle | null> {
  const { waitMs = 0, leaseMs, signal } = options;
  assertDuration('waitMs', waitMs, { allowInfinity: true, max: MAX_LEASE_MS });
  if (leaseMs !== undefined) assertDuration('leaseMs', leaseMs, { min: 1, max: MAX_LEASE_MS });
  engine.assertOpen();
  signal?.throwIfAborted();
  const started = now();
  // waitMs 0 means one attempt, as long as Redis takes to answer; any wait bounds the attempts too.
  const first = await attemptBefore(spec.attempt(false), waitMs === 0 ? Infinity : started + waitMs);
  if (first === null) {
    observe(engine, name, spec.kind, 'timeout', started);
    return null;
  }
  if (first.handle || waitMs === 0) {
    observe(engine, name, spec.kind, first.handle ? 'acquired' : 'busy', started);
    return first.handle;
  }
  const handle = await waitForRelease(spec, started + waitMs, signal, engine.notifier.join(spec.channel));
  observe(engine, name, spec.kind, handle ? 'acquired' : 'timeout', started);
  return handle;
}

async function waitForRelease(spec: WaitSpec, deadline: number, signal: AbortSignal | undefined, waiter: Waiter): Promise<LockHandle | null> {
  let handle: LockHandle | null = null;
  try {
    // Subscribed before queuing: a release between the two would otherwise go unnoticed. No
    // longer than a poll: a subscriber that cannot connect must not hold the waiter up.
    await settledWithin(waiter.subscribed, Math.min(deadline - now(), spec.sleepCapMs));
    spec.joined?.(waiter);
    for (;;) {
      signal?.throwIfAborted();
      const attempt = await attemptBefore(spec.attempt(true), deadline);
      if (attempt === null) return null;
      if (attempt.handle) return (handle = attempt.handle);
      const remainingMs = deadline - now();
      if (remainingMs <= 0) return null;
      const untilChange = attempt.retryInMs >= 0 ? attempt.retryInMs : Infinity; // -1: no TTL
      await waiter.sleep(Math.max(1, Math.min(untilChange, spec.sleepCapMs, remainingMs)), signal);
    }
  } finally {
    spec.left?.(waiter, handle !== null);
    waiter.leave();
    if (!handle) await spec.gaveUp?.().catch(() => undefined); // Redis unreachable: the queue entry expires
  }
}

/**
 * One attempt, given up at `deadline` (null) when Redis is down or slow: ioredis would otherwise
 * queue and retry the command for seconds past any wait the caller asked for. An acquisition that
 * arrives after we gave up is released as soon as it arrives.
 */
export async function attemptBefore<T extends { handle: LockHandle | null }>(attempt: Promise<T>, deadline: number): Promise<T | null> {
  if (deadline === Infinity) return attempt;
  const outcome = await within(attempt, deadline - now());
  if (outcome === TIMED_OUT) {
    attempt.then((late) => late.handle?.release()).catch(() => undefined);
    return null;
  }
  if (outcome instanceof Error) throw outcome;
  return outcome;
}

/** `lock()` of every kind: tryLock waiting forever by default, LockTimeoutError when it gives up. */
export async function lockOrTimeout(
  name: string,
  tryLock: (options: TryLockOptions) => Promise<LockHandle | null>,
  options: TryLockOptions,
): Promise<LockHandle> {
  const waitMs = options.waitMs ?? Infinity;
  const handle = await tryLock({ ...options, waitMs });
  if (!handle) throw new LockTimeoutError(name, waitMs);
  return handle;
}

function observe(engine: LockEngine, name: string, kind: LockWaitEvent['kind'], outcome: LockWaitEvent['outcome'], started: number): void {
  const observer = engine.observer;
  if (observer?.onAcquire === undefined) return;
  try {
    observer.onAcquire({ name, kind, outcome, waitedMs: now() - started });
  } catch {
    // An observer is for watching; it must never break locking.
  }
}

export interface GrantedHold {
  /** Key of the hold in engine.holds: kind, name and owner. */
  id: string;
  name: string;
  fencingToken: bigint;
  /** Redis counted a re-entry (the owner already held it). */
  reentry: boolean;
  backend: HoldBackend;
  /** performance.now() when the acquire script was sent. */
  sentAt: number;
  leaseMs: number;
  /** No fixed lease was asked for: renew every lease/3. */
  watchdog: boolean;
}

/** Turns a granted acquisition into a handle on the owner's hold (joined or new), with its watchdog. */
export async function handleFor(engine: LockEngine, granted: GrantedHold): Promise<LockHandle> {
  const hold = holdFor(engine, granted);
  hold.confirmLease(granted.sentAt, granted.leaseMs);
  if (granted.watchdog) hold.watch(granted.leaseMs);
  const handle = hold.newHandle();
  if (engine.isClosed) {
    // Closed while the request was in flight: no watchdog may outlive close().
    await handle.release().catch(() => undefined);
    throw new LockClientClosedError();
  }
  return handle;
}

function holdFor(engine: LockEngine, { id, name, fencingToken, reentry, backend }: GrantedHold): Hold {
  const holds = engine.holds;
  const existing = holds.get(id);
  if (existing && reentry) return existing;
  // A new hold while we still had one: its last release is in flight (forget it), or Redis expired
  // it before our timer noticed (tell its holders).
  if (existing?.handleCount === 0) existing.end();
  else existing?.lose('lease expired');
  const hold = new Hold(name, fencingToken, backend, (ended) => {
    if (holds.get(id) === ended) holds.delete(id);
  });
  holds.set(id, hold);
  return hold;
}

/** The latest handle of `holdId` in this process, for `unlock()`. */
export function latestHandle(engine: LockEngine, holdId: string): LockHandle | undefined {
  return engine.holds.get(holdId)?.latestHandle();
}

/** `unlock()` of every kind: releases the latest handle of `holdId` (undefined: no owner), else LockNotHeldError. */
export async function unlockLatest(engine: LockEngine, name: string, holdId: string | undefined): Promise<void> {
  const handle = holdId === undefined ? undefined : latestHandle(engine, holdId);
  if (!handle || !(await handle.release())) throw new LockNotHeldError(name);
}

/** Waits for `promise` to settle (either way), at most `ms`. */
async function settledWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  await within(promise, ms);
}
