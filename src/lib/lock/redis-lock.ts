import { randomUUID } from 'node:crypto';
import { currentContextId } from './context.js';
import { assertDuration, fenceKey, fenceTtlMs, lockKey, MAX_LEASE_MS, type LockEngine } from './engine.js';
import { LockClientClosedError, LockReentryError } from './errors.js';
import { Hold, type HoldBackend } from './hold.js';
import type { LockKind, LockScripts } from './scripts.js';
import type { Lock, LockHandle, LockWaitEvent, TryLockOptions } from './types.js';
import { attemptBefore, lockOrTimeout, unlockLatest } from './waiting.js';

type Attempt = { handle: LockHandle } | { handle: null; ttlMs: number };

const now = (): number => performance.now();

/** Acquisition, waiting and watchdog shared by both kinds of single-Redis lock. */
abstract class RedisLock implements Lock {
  protected abstract readonly kind: LockKind;

  constructor(
    protected readonly engine: LockEngine,
    readonly name: string,
  ) {
    // Braces would move the Cluster hash tag, and the lock and fence keys must share one slot.
    if (name.length === 0 || /[{}]/.test(name)) {
      throw new TypeError(`Invalid lock name (empty or with braces): ${JSON.stringify(name)}`);
    }
  }

  /** The Redis value identifying the holder of one acquisition. */
  protected abstract ownerOfNextAcquisition(): string;

  get defaultLeaseMs(): number {
    return this.engine.defaultLeaseMs;
  }

  async tryLock(options: TryLockOptions = {}): Promise<LockHandle | null> {
    const { waitMs = 0, leaseMs, signal } = options;
    assertDuration('waitMs', waitMs, { allowInfinity: true, max: MAX_LEASE_MS });
    if (leaseMs !== undefined) assertDuration('leaseMs', leaseMs, { min: 1, max: MAX_LEASE_MS });
    this.engine.assertOpen();
    signal?.throwIfAborted();
    this.assertWaitCanEnd(waitMs);
    const started = now();
    const deadline = started + waitMs;
    const owner = this.ownerOfNextAcquisition();
    // waitMs 0 means one attempt, as long as Redis takes to answer; any wait bounds the attempts too.
    const first = await attemptBefore(this.attempt(owner, leaseMs), waitMs === 0 ? Infinity : deadline);
    if (first === null) {
      this.observe('timeout', started);
      return null;
    }
    if (first.handle || waitMs === 0) {
      this.observe(first.handle ? 'acquired' : 'busy', started);
      return first.handle;
    }
    const handle = await this.waitForRelease(owner, leaseMs, deadline, signal);
    this.observe(handle ? 'acquired' : 'timeout', started);
    return handle;
  }

  private observe(outcome: LockWaitEvent['outcome'], started: number): void {
    const observer = this.engine.observer;
    if (observer?.onAcquire === undefined) return;
    try {
      observer.onAcquire({ name: this.name, kind: this.kind, outcome, waitedMs: now() - started });
    } catch {
      // An observer is for watching; it must never break locking.
    }
  }

  lock(options: TryLockOptions = {}): Promise<LockHandle> {
    return lockOrTimeout(this.name, (tryOptions) => this.tryLock(tryOptions), options);
  }

  async isLocked(): Promise<boolean> {
    return (await this.engine.redis.exists(lockKey(this.name))) === 1;
  }

  protected get scripts(): LockScripts {
    return this.engine.scriptsFor(this.kind);
  }

  protected holdId(owner: string): string {
    return `${this.kind}\u0000${this.name}\u0000${owner}`;
  }

  /**
   * Sleeps until a release notification, the holder's lease end or the poll cap, then tries again.
   * No busy spinning: every attempt follows a notification or a bounded sleep.
   */
  private async waitForRelease(owner: string, leaseMs: number | undefined, deadline: number, signal: AbortSignal | undefined): Promise<LockHandle | null> {
    const waiter = this.engine.notifier.join(this.engine.releaseChannel(this.name));
    try {
      // Try again only once subscribed: a release between our first attempt and the
      // subscription would otherwise go unnoticed until the next poll. No longer than a poll,
      // though: a subscriber that cannot connect must not hold the waiter up until its deadline.
      await settledWithin(waiter.subscribed, Math.min(deadline - now(), this.engine.pollMs));
      for (;;) {
        signal?.throwIfAborted();
        const attempt = await attemptBefore(this.attempt(owner, leaseMs), deadline);
        if (attempt === null) return null;
        if (attempt.handle) return attempt.handle;
        const remainingMs = deadline - now();
        if (remainingMs <= 0) return null;
        await waiter.sleep(this.pauseMs(attempt.ttlMs, remainingMs), signal);
      }
    } finally {
      waiter.leave();
    }
  }

  /** Until the holder's lease ends, but never longer than the poll cap or the time left. */
  private pauseMs(holderTtlMs: number, remainingMs: number): number {
    const untilExpiry = holderTtlMs >= 0 ? holderTtlMs : Infinity; // -1: a key without TTL
    return Math.max(1, Math.min(untilExpiry, this.engine.pollMs, remainingMs));
  }

  /** A hook for locks that can tell a wait could never end (SimpleLock). */
  protected assertWaitCanEnd(_waitMs: number): void {}

  private async attempt(owner: string, leaseMs: number | undefined): Promise<Attempt> {
    const lease = leaseMs ?? this.engine.defaultLeaseMs;
    const sentAt = now();
    const [status, value] = await this.scripts.acquire(lockKey(this.name), fenceKey(this.name), owner, lease, fenceTtlMs(lease));
    if (status === 0) return { handle: null, ttlMs: Number(value) };
    const hold = this.holdFor(owner, BigInt(value), status === 2);
    hold.confirmLease(sentAt, lease);
    if (leaseMs === undefined) hold.watch(lease);
    const handle = hold.newHandle();
    if (this.engine.isClosed) {
      // Closed while the request was in flight: no watchdog may outlive close().
      await handle.release().catch(() => undefined);
      throw new LockClientClosedError();
    }
    return { handle };
  }

  private holdFor(owner: string, fencingToken: bigint, reentry: boolean): Hold {
    const id = this.holdId(owner);
    const holds = this.engine.holds;
    const existing = holds.get(id);
    if (existing && reentry) return existing;
    // A new hold while we still had one: its last release is in flight (just forget it), or Redis
    // expired it before our timer noticed (tell its holders).
    if (existing?.handleCount === 0) existing.end();
    else existing?.lose('lease expired');
    const hold = new Hold(this.name, fencingToken, this.backend(owner), (ended) => {
      if (holds.get(id) === ended) holds.delete(id);
    });
    holds.set(id, hold);
    return hold;
  }

  private backend(owner: string): HoldBackend {
    const { name, scripts } = this;
    const channel = this.engine.releaseChannel(name);
    return {
      renew: async (leaseMs) => (await scripts.renew(lockKey(name), fenceKey(name), owner, leaseMs, fenceTtlMs(leaseMs))) === 1,
      release: () => scripts.release(lockKey(name), owner, channel),
    };
  }
}

/**
 * Redisson's RLock: a Redis hash {owner: hold count}. The owner is this client's instance id plus
 * the current async context (see LockClient.runInContext), so a logical operation can re-enter
 * the lock across `await`s while every other operation is excluded. Outside any context each
 * acquisition is its own owner (no re-entry).
 */
export class ReentrantLock extends RedisLock {
  protected readonly kind = 'reentrant';

  protected ownerOfNextAcquisition(): string {
    return `${this.engine.instanceId}:${currentContextId() ?? randomUUID()}`;
  }

  /**
   * Releases the latest hold taken by the current async context (like Redisson's `unlock()`).
   * Throws LockNotHeldError if this context holds no hold of the lock (or the lock was lost).
   */
  unlock(): Promise<void> {
    const owner = this.contextOwner();
    return unlockLatest(this.engine, this.name, owner ? this.holdId(owner) : undefined);
  }

  /** Holds of the current async context according to Redis (0 when it does not hold the lock). */
  async holdCount(): Promise<number> {
    const owner = this.contextOwner();
    if (!owner) return 0;
    return Number((await this.engine.redis.hget(lockKey(this.name), owner)) ?? 0);
  }

  async isHeldByCurrentContext(): Promise<boolean> {
    return (await this.holdCount()) > 0;
  }

  private contextOwner(): string | undefined {
    const contextId = currentContextId();
    return contextId && `${this.engine.instanceId}:${contextId}`;
  }
}

/**
 * The classic Redis lock: `SET key token NX PX lease`, released by compare-and-delete of the
 * token, so only the acquisition that set it can delete it. Not reentrant: a second acquisition
 * from the same operation waits like anyone else. Released through its handle.
 */
export class SimpleLock extends RedisLock {
  protected readonly kind = 'simple';

  protected ownerOfNextAcquisition(): string {
    // The async context in the token lets a second acquisition by the holder be recognised.
    return `${this.engine.instanceId}:${currentContextId() ?? '-'}:${randomUUID()}`;
  }

  /**
   * Waiting for a simple lock that the current async context holds would only end at the
   * timeout (or never, with the default infinite wait of `lock()`): a bug to report, not a wait.
   * `tryLock({ waitMs: 0 })` still answers null, as for any lock that is taken.
   */
  protected override assertWaitCanEnd(waitMs: number): void {
    const contextId = currentContextId();
    if (waitMs === 0 || contextId === undefined) return;
    const ownHold = this.holdId(`${this.engine.instanceId}:${contextId}:`);
    for (const [id, hold] of this.engine.holds) {
      if (id.startsWith(ownHold) && !hold.isEnded) throw new LockReentryError(this.name);
    }
  }
}

/** Waits for `promise` to settle (either way), at most `ms`. */
async function settledWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, Math.max(0, Math.min(ms, 2 ** 31 - 1)));
  });
  try {
    await Promise.race([promise.catch(() => undefined), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
