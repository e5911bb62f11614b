import type { LockEngine } from './engine.js';
import { MAX_LEASE_MS, assertDuration } from './engine.js';
import { PermitTimeoutError } from './errors.js';
import { synchronizerScripts } from './synchronizer-scripts.js';
import { assertCount, assertName, waitFor } from './synchronizer-wait.js';

/** Semaphore key: the number of permits available, as a string. */
export const semaphoreKey = (name: string): string => `semaphore:{${name}}`;

export interface AcquireOptions {
  /** Permits to take at once (all or none). Default 1. */
  permits?: number;
  /** How long to wait, in ms: `tryAcquire` defaults to 0 (one try), `acquire` to Infinity. */
  waitMs?: number;
  /** Gives up waiting: the call rejects with `signal.reason`. */
  signal?: AbortSignal;
}

/**
 * Redisson's RSemaphore: a counter of permits in Redis that any process may take from and give
 * back to. Permits are not owned: a holder that dies keeps its permits taken for ever (use the
 * PermitExpirableSemaphore when holders can die), and anyone may release. Waiters are woken by
 * pub/sub: a release tells each process how many permits are available, which wakes that many
 * of its waiters.
 */
export class Semaphore {
  constructor(
    private readonly engine: LockEngine,
    readonly name: string,
  ) {
    assertName('semaphore', name);
  }

  private get key(): string {
    return semaphoreKey(this.name);
  }

  private get channel(): string {
    return `${this.engine.redis.options.keyPrefix ?? ''}semaphore-channel:{${this.name}}`;
  }

  private get scripts(): ReturnType<typeof synchronizerScripts> {
    return synchronizerScripts(this.engine.redis);
  }

  /** Sets the permits if they were never set (or the semaphore was deleted); false otherwise. */
  async trySetPermits(permits: number): Promise<boolean> {
    assertCount('permits', permits, 0);
    return (await this.scripts.semaphoreSet(this.key, permits, this.channel, '0')) === 1;
  }

  /** Sets the permits, whatever they were (permits taken meanwhile are forgotten). */
  async setPermits(permits: number): Promise<void> {
    assertCount('permits', permits, 0);
    await this.scripts.semaphoreSet(this.key, permits, this.channel, '1');
  }

  /** Adds permits (a negative number takes them away, down below zero if need be); returns those available. */
  addPermits(permits: number): Promise<number> {
    assertCount('permits', permits, -Number.MAX_SAFE_INTEGER);
    return this.scripts.semaphoreRelease(this.key, permits, this.channel);
  }

  /** Takes `permits` (default 1), waiting up to `waitMs` (default 0); false if not taken in time. */
  async tryAcquire(options: AcquireOptions = {}): Promise<boolean> {
    const { permits = 1, waitMs = 0, signal } = options;
    assertCount('permits', permits, 1);
    assertDuration('waitMs', waitMs, { allowInfinity: true, max: MAX_LEASE_MS });
    const taken = await waitFor<boolean>(
      this.engine,
      this.channel,
      async () => {
        const [status] = await this.scripts.semaphoreAcquire(this.key, permits);
        return status === 1 ? { value: true } : { retryInMs: -1 };
      },
      () => this.release(permits),
      waitMs,
      signal,
    );
    return taken === true;
  }

  /** Like tryAcquire, but waits up to `waitMs` (default Infinity) and then throws PermitTimeoutError. */
  async acquire(options: AcquireOptions = {}): Promise<void> {
    const waitMs = options.waitMs ?? Infinity;
    if (!(await this.tryAcquire({ ...options, waitMs }))) throw new PermitTimeoutError(this.name, options.permits ?? 1, waitMs);
  }

  /** Gives `permits` (default 1) back and wakes waiters; returns the permits available now. */
  release(permits = 1): Promise<number> {
    assertCount('permits', permits, 1);
    return this.scripts.semaphoreRelease(this.key, permits, this.channel);
  }

  /** Permits available now (0 when never set). */
  async availablePermits(): Promise<number> {
    return Number((await this.engine.redis.get(this.key)) ?? 0);
  }

  /** Takes every available permit; returns how many. */
  drainPermits(): Promise<number> {
    return this.scripts.semaphoreDrain(this.key);
  }

  /** Deletes the semaphore (its permits are then unset); true if it existed. */
  async delete(): Promise<boolean> {
    return (await this.engine.redis.del(this.key)) === 1;
  }
}
