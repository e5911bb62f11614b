import { randomUUID } from 'node:crypto';
import type { LockEngine } from './engine.js';
import { MAX_LEASE_MS, assertDuration } from './engine.js';
import { PermitTimeoutError } from './errors.js';
import { Hold } from './hold.js';
import { synchronizerScripts } from './synchronizer-scripts.js';
import { assertCount, assertName, waitFor } from './synchronizer-wait.js';

/** Permits available (string) and the leases of the permits taken (sorted set id -> end, ms); one slot. */
export const permitSemaphoreKeys = (name: string): [permits: string, leases: string] => [`psemaphore:{${name}}`, `psemaphore:{${name}}:leases`];

export interface PermitAcquireOptions {
  /** Permits to take at once (all or none), each with its own id. Default 1. */
  permits?: number;
  /** How long to wait, in ms: `tryAcquire` defaults to 0 (one try), `acquire` to Infinity. */
  waitMs?: number;
  /**
   * Fixed lease in ms: the permits come back by themselves then, unless released before. When
   * omitted, the client's default lease is used and a watchdog renews it while the holder lives.
   */
  leaseMs?: number;
  /** Gives up waiting: the call rejects with `signal.reason`. */
  signal?: AbortSignal;
}

/** Permits taken together. */
export interface PermitLease {
  readonly semaphoreName: string;
  readonly permitIds: readonly string[];
  /**
   * Aborted (LockLostError) as soon as this process can no longer assume it holds the permits:
   * the fixed lease ran out, the watchdog found them gone, or renewals failed for a whole lease.
   */
  readonly signal: AbortSignal;
  /** Gives the permits back; false when they were no longer all held (lease ended). Idempotent. */
  release(): Promise<boolean>;
}

/**
 * Redisson's RPermitExpirableSemaphore: each permit taken has an id and a lease. A holder that
 * dies gives its permits back when the lease ends (the next acquire or availablePermits call
 * reclaims them, and a waiter sleeps at most until the next lease end). Leases are measured on
 * the Redis server's clock. Without `leaseMs`, a watchdog renews the lease every third of it.
 */
export class PermitExpirableSemaphore {
  constructor(
    private readonly engine: LockEngine,
    readonly name: string,
  ) {
    assertName('semaphore', name);
  }

  private get keys(): [string, string] {
    return permitSemaphoreKeys(this.name);
  }

  private get channel(): string {
    return `${this.engine.redis.options.keyPrefix ?? ''}psemaphore-channel:{${this.name}}`;
  }

  private get scripts(): ReturnType<typeof synchronizerScripts> {
    return synchronizerScripts(this.engine.redis);
  }

  /** Sets the permits if never set (no permits and no leases yet); false otherwise. */
  async trySetPermits(permits: number): Promise<boolean> {
    assertCount('permits', permits, 0);
    return (await this.scripts.permitAvailable(...this.keys, this.channel, 'set', permits))[1] === 1;
  }

  /** Adds permits (negative: takes them away); returns those available now. */
  async addPermits(permits: number): Promise<number> {
    assertCount('permits', permits, -Number.MAX_SAFE_INTEGER);
    return (await this.scripts.permitAvailable(...this.keys, this.channel, 'add', permits))[0];
  }

  /** Permits available now, counting those of ended leases as given back. */
  async availablePermits(): Promise<number> {
    return (await this.scripts.permitAvailable(...this.keys, this.channel, '', 0))[0];
  }

  /** Takes permits, waiting up to `waitMs` (default 0); null if not taken in time. */
  async tryAcquire(options: PermitAcquireOptions = {}): Promise<PermitLease | null> {
    const { permits = 1, waitMs = 0, leaseMs, signal } = options;
    assertCount('permits', permits, 1);
    assertDuration('waitMs', waitMs, { allowInfinity: true, max: MAX_LEASE_MS });
    if (leaseMs !== undefined) assertDuration('leaseMs', leaseMs, { min: 1, max: MAX_LEASE_MS });
    const lease = leaseMs ?? this.engine.defaultLeaseMs;
    const ids = Array.from({ length: permits }, () => randomUUID());
    return waitFor<PermitLease>(
      this.engine,
      this.channel,
      async () => {
        const sentAt = performance.now();
        const [status, value] = await this.scripts.permitAcquire(...this.keys, lease, ...ids);
        return status === 1 ? { value: this.hold(ids, sentAt, lease, leaseMs === undefined) } : { retryInMs: value };
      },
      (late) => late.release(),
      waitMs,
      signal,
    );
  }

  /** Like tryAcquire, but waits up to `waitMs` (default Infinity) and then throws PermitTimeoutError. */
  async acquire(options: PermitAcquireOptions = {}): Promise<PermitLease> {
    const waitMs = options.waitMs ?? Infinity;
    const lease = await this.tryAcquire({ ...options, waitMs });
    if (!lease) throw new PermitTimeoutError(this.name, options.permits ?? 1, waitMs);
    return lease;
  }

  /** Gives permits back by id (e.g. ids kept by another process); true if all were held. */
  async release(permitIds: readonly string[]): Promise<boolean> {
    if (permitIds.length === 0) return true;
    return (await this.scripts.permitRelease(...this.keys, this.channel, ...permitIds)) === 1;
  }

  /** Deletes the semaphore: its permits and every lease. */
  async delete(): Promise<boolean> {
    return (await this.engine.redis.del(...this.keys)) > 0;
  }

  /** A Hold (the locks' lease timer and watchdog) for the permits just taken. */
  private hold(ids: string[], sentAt: number, leaseMs: number, watchdog: boolean): PermitLease {
    const { scripts, keys, channel, name } = this;
    const holdId = `permit\u0000${name}\u0000${ids[0]!}`;
    const holds = this.engine.holds;
    const hold = new Hold(
      name,
      0n,
      {
        renew: async (ms) => (await scripts.permitRenew(...keys, ms, ...ids)) === 1,
        release: () => scripts.permitRelease(...keys, channel, ...ids),
      },
      (ended) => {
        if (holds.get(holdId) === ended) holds.delete(holdId);
      },
    );
    holds.set(holdId, hold); // so that LockClient.close() stops its watchdog
    hold.confirmLease(sentAt, leaseMs);
    if (watchdog) hold.watch(leaseMs);
    const handle = hold.newHandle();
    return { semaphoreName: name, permitIds: ids, signal: hold.signal, release: () => handle.release() };
  }
}
