import { LockClientClosedError } from './errors.js';
import { MAX_TIMER_MS } from './timers.js';
import type { Hold } from './hold.js';
import { ReleaseNotifier } from './release-notifier.js';
import { defineLockScripts, type LockKind, type LockScripts } from './scripts.js';
import type { LockObserver, RedisClient } from './types.js';

/** Lock key: a hash (reentrant) or a string token (simple), with the lease as PTTL. */
export const lockKey = (name: string): string => `lock:{${name}}`;
/** Last fencing token of the lock name; same hash tag as the lock key (one Cluster slot). */
export const fenceKey = (name: string): string => `lock:{${name}}:fence`;

/**
 * The fence key outlives every lease by far, yet expires, so that locks named after users or
 * orders do not leave a key behind forever. Tokens stay increasing after it expired because
 * they are at least the server time in microseconds (see includes/fence.lua).
 */
export const fenceTtlMs = (leaseMs: number): number => Math.max(7 * 24 * 3600_000, 2 * leaseMs);

export { MAX_TIMER_MS } from './timers.js';
/**
 * Longest lease or wait: far beyond Node's timer limit (MAX_TIMER_MS, 24.8 days), which the lock's
 * timers get around by chaining (timers.ts); 2^50 ms keeps 2 × lease a safe integer for Redis.
 */
export const MAX_LEASE_MS = 2 ** 50;

/** State shared by the locks of one LockClient. */
export class LockEngine {
  /** Holds of this process by kind, name and owner. */
  readonly holds = new Map<string, Hold>();
  readonly notifier: ReleaseNotifier;
  /** ioredis prefixes keys but not pub/sub channels: channels get the prefix from us. */
  private readonly keyPrefix: string;
  private readonly scripts: Record<LockKind, LockScripts>;
  private closed = false;

  constructor(
    readonly redis: RedisClient,
    readonly instanceId: string,
    readonly defaultLeaseMs: number,
    readonly pollMs: number,
    readonly observer?: LockObserver,
  ) {
    this.keyPrefix = redis.options.keyPrefix ?? '';
    this.notifier = new ReleaseNotifier(redis);
    this.scripts = { reentrant: defineLockScripts(redis, 'reentrant'), simple: defineLockScripts(redis, 'simple') };
  }

  get isClosed(): boolean {
    return this.closed;
  }

  scriptsFor(kind: LockKind): LockScripts {
    return this.scripts[kind];
  }

  releaseChannel(name: string): string {
    return `${this.keyPrefix}lock-channel:{${name}}`;
  }

  assertOpen(): void {
    if (this.closed) throw new LockClientClosedError();
  }

  /** Stops every watchdog (telling the holders) and the subscriber. Locks are not deleted. */
  async close(): Promise<void> {
    this.closed = true;
    for (const hold of [...this.holds.values()]) hold.lose('LockClient closed');
    await this.notifier.close();
  }
}

export function assertDuration(what: string, ms: number, { allowInfinity = false, min = 0, max = MAX_TIMER_MS } = {}): void {
  const valid = (allowInfinity && ms === Infinity) || (Number.isInteger(ms) && ms >= min && ms <= max);
  if (!valid) throw new RangeError(`${what} must be an integer number of ms in [${min}, ${max}]: ${ms}`);
}
