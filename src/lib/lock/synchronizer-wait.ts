import type { LockEngine } from './engine.js';
import { TIMED_OUT, within } from './timers.js';

/** One try of a synchronizer: done with a value, or not yet (retry after at most `retryInMs`, -1: no hint). */
export type Try<T> = { value: T } | { retryInMs: number };

const now = (): number => performance.now();

/**
 * The waiting loop of the semaphores and the latch, as the locks wait: try; if not done, join the
 * name's channel (one subscription per name and process), try again once subscribed, then sleep
 * until a notification, the hint (e.g. the next lease end) or `pollMs`, whichever comes first.
 * Every try is bounded by the deadline, so a Redis that is down or hangs cannot stretch `waitMs`;
 * a try that succeeds after the deadline is undone. `waitMs` 0: one try, as long as Redis takes.
 */
export async function waitFor<T>(
  engine: LockEngine,
  channel: string,
  tryOnce: () => Promise<Try<T>>,
  undo: (value: T) => Promise<unknown>,
  waitMs: number,
  signal: AbortSignal | undefined,
): Promise<T | null> {
  engine.assertOpen();
  signal?.throwIfAborted();
  const deadline = now() + waitMs;
  const bounded = async (): Promise<Try<T> | null> => {
    const pending = tryOnce();
    if (waitMs === 0) return pending;
    const outcome = await within(pending, deadline - now());
    if (outcome === TIMED_OUT) {
      pending.then((late) => ('value' in late ? undo(late.value) : undefined)).catch(() => undefined);
      return null;
    }
    if (outcome instanceof Error) throw outcome;
    return outcome;
  };
  const first = await bounded();
  if (first === null || 'value' in first) return first?.value ?? null;
  if (waitMs === 0) return null;
  const waiter = engine.notifier.join(channel);
  try {
    // Subscribed before the next try (else a notification between the two is lost), yet no
    // longer than a poll: a subscriber that cannot connect must not hold the waiter up.
    await within(waiter.subscribed, Math.min(deadline - now(), engine.pollMs));
    for (;;) {
      signal?.throwIfAborted();
      const result = await bounded();
      if (result === null || 'value' in result) return result?.value ?? null;
      const remainingMs = deadline - now();
      if (remainingMs <= 0) return null;
      const hintMs = result.retryInMs >= 0 ? result.retryInMs : Infinity;
      await waiter.sleep(Math.max(1, Math.min(hintMs, engine.pollMs, remainingMs)), signal);
    }
  } finally {
    waiter.leave();
  }
}

/** Synchronizer names go inside a Cluster hash tag: no braces, not empty. */
export function assertName(kind: string, name: string): void {
  if (name.length === 0 || /[{}]/.test(name)) throw new TypeError(`Invalid ${kind} name (empty or with braces): ${JSON.stringify(name)}`);
}

export function assertCount(what: string, n: number, min: number): void {
  if (!Number.isSafeInteger(n) || n < min) throw new RangeError(`${what} must be an integer >= ${min}: ${n}`);
}
