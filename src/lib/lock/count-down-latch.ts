import type { LockEngine } from './engine.js';
import { MAX_LEASE_MS, assertDuration } from './engine.js';
import { synchronizerScripts } from './synchronizer-scripts.js';
import { assertCount, assertName, waitFor } from './synchronizer-wait.js';

/** Latch key: the count left, as a string; deleted when it reaches zero. */
export const latchKey = (name: string): string => `latch:{${name}}`;

export interface AwaitOptions {
  /** How long to wait for zero, in ms. Default Infinity. */
  waitMs?: number;
  /** Gives up waiting: the call rejects with `signal.reason`. */
  signal?: AbortSignal;
}

/**
 * Redisson's RCountDownLatch: a count in Redis that processes count down; waiters are let through
 * when it reaches zero. The last count-down deletes the key and publishes on the latch's channel,
 * which wakes every waiter of every process at once. A latch that is not set (or already at zero)
 * is open. Like Redisson's, the count has no TTL: delete() a latch that will never reach zero.
 */
export class CountDownLatch {
  constructor(
    private readonly engine: LockEngine,
    readonly name: string,
  ) {
    assertName('latch', name);
  }

  private get key(): string {
    return latchKey(this.name);
  }

  private get channel(): string {
    return `${this.engine.redis.options.keyPrefix ?? ''}latch-channel:{${this.name}}`;
  }

  /** Sets the count if the latch is open (never set, or counted down to zero); false if still counting. */
  async trySetCount(count: number): Promise<boolean> {
    assertCount('count', count, 1);
    return (await synchronizerScripts(this.engine.redis).latchSet(this.key, count)) === 1;
  }

  /** Counts down by one; returns the count left (0: the latch is open and its waiters were woken). */
  countDown(): Promise<number> {
    return synchronizerScripts(this.engine.redis).latchCountDown(this.key, this.channel);
  }

  /** The count left (0 when open). */
  async getCount(): Promise<number> {
    return Number((await this.engine.redis.get(this.key)) ?? 0);
  }

  /** Waits until the count is zero, up to `waitMs` (default Infinity); true if it is, false on timeout. */
  async await(options: AwaitOptions = {}): Promise<boolean> {
    const { waitMs = Infinity, signal } = options;
    assertDuration('waitMs', waitMs, { allowInfinity: true, max: MAX_LEASE_MS });
    const open = await waitFor<boolean>(
      this.engine,
      this.channel,
      async () => ((await this.getCount()) <= 0 ? { value: true } : { retryInMs: -1 }),
      () => Promise.resolve(),
      waitMs,
      signal,
    );
    return open === true;
  }

  /** Deletes the count (opening the latch without waking anyone); true if it existed. */
  async delete(): Promise<boolean> {
    return (await this.engine.redis.del(this.key)) === 1;
  }
}
