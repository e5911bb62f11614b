import { LockClientClosedError } from './errors.js';
import type { RedisClient } from './types.js';

interface ChannelWaiters {
  /** In arrival order: a release wakes the longest waiter first. */
  waiters: Waiter[];
  /** Settles when the SUBSCRIBE is confirmed; rejects if it failed (waiters then only poll). */
  subscribed: Promise<void>;
}

/**
 * Release notifications for the waiters of one LockClient: one subscriber connection, one
 * subscription per lock name that has waiters in this process (not one per waiter), dropped
 * when its last waiter leaves. The release scripts PUBLISH on the lock's channel.
 */
export class ReleaseNotifier {
  private subscriber: RedisClient | undefined;
  private readonly channels = new Map<string, ChannelWaiters>();
  private closed = false;

  constructor(private readonly redis: RedisClient) {}

  /** Registers a waiter on `channel`; call `waiter.leave()` when done. */
  join(channel: string): Waiter {
    if (this.closed) throw new LockClientClosedError();
    let entry = this.channels.get(channel);
    if (!entry) {
      entry = { waiters: [], subscribed: this.subscribe(channel) };
      this.channels.set(channel, entry);
    }
    const waiter: Waiter = new Waiter(entry.subscribed, () => this.leave(channel, waiter));
    entry.waiters.push(waiter);
    return waiter;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const entry of this.channels.values()) {
      for (const waiter of entry.waiters) waiter.fail(new LockClientClosedError());
    }
    this.channels.clear();
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    if (!subscriber) return;
    try {
      await subscriber.quit();
    } catch {
      subscriber.disconnect();
    }
  }

  private subscribe(channel: string): Promise<void> {
    this.subscriber ??= this.createSubscriber();
    const subscribed = this.subscriber.subscribe(channel).then(() => undefined);
    subscribed.catch(() => undefined); // not fatal: waiters fall back to polling
    return subscribed;
  }

  private createSubscriber(): RedisClient {
    // duplicate() keeps the connection options (and the key prefix, which pub/sub ignores: the
    // channel names we are given already contain it).
    const subscriber = this.redis.duplicate();
    subscriber.on('message', (channel: string, message: string) => this.wake(channel, message));
    // Connection errors are retried by ioredis and re-subscribed on reconnect; a release published
    // meanwhile is missed, which the waiters' bounded poll covers. Nothing to report here.
    subscriber.on('error', () => undefined);
    return subscriber;
  }

  /**
   * One release frees the lock for one new holder, so wake one waiter, not all: no thundering
   * herd of attempts on every release. Prefer the longest sleeping waiter; else one that is
   * attempting right now (its attempt may have come just before the release) and has no
   * wake-up pending yet.
   */
  private wakeOne(channel: string): boolean {
    const waiters = this.channels.get(channel)?.waiters ?? [];
    const chosen = waiters.find((waiter) => waiter.isSleeping) ?? waiters.find((waiter) => !waiter.hasPendingWakeUp);
    chosen?.notify();
    return chosen !== undefined;
  }

  /**
   * A lock's `released` wakes one waiter; a number (a semaphore's permits now available) wakes
   * up to that many; `all` (a latch at zero) wakes every waiter of the channel.
   */
  private wake(channel: string, message: string): void {
    const count = message === 'all' ? Infinity : /^\d+$/.test(message) ? Number(message) : 1;
    for (let woken = 0; woken < count && this.wakeOne(channel); woken++);
  }

  private leave(channel: string, waiter: Waiter): void {
    const entry = this.channels.get(channel);
    if (!entry) return;
    entry.waiters.splice(entry.waiters.indexOf(waiter), 1);
    // A waiter that leaves with an unused wake-up (it got the lock another way, or gave up)
    // passes it on, or another waiter would sleep until its next poll.
    if (waiter.hasPendingWakeUp) this.wakeOne(channel);
    if (entry.waiters.length > 0) return;
    this.channels.delete(channel);
    // SUBSCRIBE and UNSUBSCRIBE go in order over the one connection, so a waiter that joins
    // right after this gets a new, valid subscription.
    this.subscriber?.unsubscribe(channel).catch(() => undefined);
  }
}

/** A waiter for one lock: sleeps until woken by a release, a timeout or an abort. */
export class Waiter {
  private pendingWakeUp = false;
  private wakeUp: (() => void) | undefined;
  private failWaiting: ((error: Error) => void) | undefined;
  private failure: Error | undefined;

  constructor(
    readonly subscribed: Promise<void>,
    readonly leave: () => void,
  ) {}

  get hasPendingWakeUp(): boolean {
    return this.pendingWakeUp;
  }

  get isSleeping(): boolean {
    return this.wakeUp !== undefined;
  }

  /** A release happened: end the current sleep, or the next one at once if not sleeping now. */
  notify(): void {
    if (this.wakeUp) this.wakeUp();
    else this.pendingWakeUp = true;
  }

  fail(error: Error): void {
    this.failure = error;
    this.failWaiting?.(error);
  }

  /** Sleeps up to `ms`; rejects with `signal.reason` on abort. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    signal?.throwIfAborted();
    if (this.pendingWakeUp) {
      this.pendingWakeUp = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const settle = (error?: unknown): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.wakeUp = undefined;
        this.failWaiting = undefined;
        if (error === undefined) resolve();
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- an abort rejects with signal.reason itself, whatever the caller aborted with
        else reject(error);
      };
      const onAbort = (): void => settle(signal?.reason);
      const timer = setTimeout(() => settle(), ms);
      this.wakeUp = () => settle();
      this.failWaiting = (error) => settle(error);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
