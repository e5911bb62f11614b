import { LockClientClosedError } from './errors.js';
import type { RedisClient } from './types.js';

interface ChannelWaiters {
  /** In arrival order: a release wakes the longest waiter first. */
  waiters: Waiter[];
  /**
   * The SUBSCRIBE of this channel: settles when confirmed, rejects if it failed. Undefined when it
   * failed: the next waiter that joins or sleeps, or the next reconnect, subscribes again.
   */
  subscription: Promise<void> | undefined;
  /** A SUBSCRIBE went out: the last waiter's leave sends UNSUBSCRIBE. */
  sent: boolean;
}

/**
 * Release notifications for the waiters of one LockClient: one subscriber connection, one
 * subscription per lock name that has waiters in this process (not one per waiter), dropped
 * when its last waiter leaves. The release scripts PUBLISH on the lock's channel.
 *
 * SUBSCRIBE and UNSUBSCRIBE go out one after the other and only on a ready connection: ioredis
 * writes a SUBSCRIBE at once while its connection is still connecting, which puts the connection
 * in subscriber mode before its ready check (INFO); the check then fails and ioredis reconnects
 * without that subscription.
 */
export class ReleaseNotifier {
  private subscriber: RedisClient | undefined;
  private readonly channels = new Map<string, ChannelWaiters>();
  /** The last (UN)SUBSCRIBE handed to the subscriber: the next one goes out after it. */
  private lastSent: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(private readonly redis: RedisClient) {}

  /** Registers a waiter on `channel`; call `waiter.leave()` when done. */
  join(channel: string): Waiter {
    if (this.closed) throw new LockClientClosedError();
    let entry = this.channels.get(channel);
    if (!entry) {
      entry = { waiters: [], subscription: undefined, sent: false };
      this.channels.set(channel, entry);
    }
    const joined = entry;
    const waiter: Waiter = new Waiter(
      this.subscribed(channel, joined),
      () => this.leave(channel, joined, waiter),
      () => {
        if (!this.closed) void this.subscribed(channel, joined);
      },
    );
    joined.waiters.push(waiter);
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

  /** The channel's subscription; subscribes when it has none (never asked, or the last one failed). */
  private subscribed(channel: string, entry: ChannelWaiters): Promise<void> {
    entry.subscription ??= this.subscribe(channel, entry);
    return entry.subscription;
  }

  private subscribe(channel: string, entry: ChannelWaiters): Promise<void> {
    const subscribed = this.send(async (subscriber) => {
      if (this.channels.get(channel) !== entry) return; // its waiters all left before it went out
      entry.sent = true;
      await subscriber.subscribe(channel);
    });
    // Not fatal: the waiters poll meanwhile. Forget the failed one, so that it is asked again.
    subscribed.catch(() => {
      if (entry.subscription === subscribed) entry.subscription = undefined;
    });
    return subscribed;
  }

  /**
   * Hands `command` to the subscriber once it is ready and the previous command went out, so that
   * a SUBSCRIBE and an UNSUBSCRIBE of one channel reach Redis in the order they were asked for.
   */
  private send(command: (subscriber: RedisClient) => Promise<unknown>): Promise<void> {
    if (this.closed) return Promise.reject(new LockClientClosedError());
    const subscriber = (this.subscriber ??= this.createSubscriber());
    const handed = this.lastSent.then(() => whenReady(subscriber)).then(() => ({ reply: command(subscriber) }));
    this.lastSent = handed.catch(() => undefined);
    return handed.then(async ({ reply }) => {
      await reply;
    });
  }

  private createSubscriber(): RedisClient {
    // duplicate() keeps the connection options (and the key prefix, which pub/sub ignores: the
    // channel names we are given already contain it).
    const subscriber = this.redis.duplicate();
    subscriber.on('message', (channel: string, message: string) => this.wake(channel, message));
    // Connection errors are retried by ioredis; every reconnect is handled on 'ready'.
    subscriber.on('error', () => undefined);
    let connectedBefore = false;
    subscriber.on('ready', () => {
      if (connectedBefore) this.resubscribeAll();
      connectedBefore = true;
    });
    return subscriber;
  }

  /**
   * After a reconnect: subscribes again every channel with waiters (ioredis's autoResubscribe
   * restores only confirmed subscriptions, and only when it is on), then wakes every waiter once,
   * since a release published while the connection was down reached nobody here.
   */
  private resubscribeAll(): void {
    if (this.closed) return;
    const resubscribed = [...this.channels].map(([channel, entry]) => {
      entry.subscription = undefined;
      return this.subscribed(channel, entry);
    });
    void Promise.allSettled(resubscribed).then(() => {
      for (const entry of this.channels.values()) for (const waiter of entry.waiters) waiter.notify();
    });
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

  private leave(channel: string, entry: ChannelWaiters, waiter: Waiter): void {
    const index = entry.waiters.indexOf(waiter);
    if (index < 0) return; // closed meanwhile
    entry.waiters.splice(index, 1);
    // A waiter that leaves with an unused wake-up (it got the lock another way, or gave up)
    // passes it on, or another waiter would sleep until its next poll.
    if (waiter.hasPendingWakeUp) this.wakeOne(channel);
    if (entry.waiters.length > 0 || this.channels.get(channel) !== entry) return;
    this.channels.delete(channel);
    // Goes out after the SUBSCRIBE, so a waiter that joins right after this gets a new, valid
    // subscription.
    if (entry.sent) this.send((subscriber) => subscriber.unsubscribe(channel)).catch(() => undefined);
  }
}

/**
 * Resolves once `subscriber` is ready: at once if it is, else on its (re)connect; connects one
 * created with lazyConnect. Rejects if it ends first.
 */
function whenReady(subscriber: RedisClient): Promise<void> {
  if (subscriber.status === 'ready') return Promise.resolve();
  if (subscriber.status === 'end') return Promise.reject(new Error('subscriber connection closed'));
  return new Promise((resolve, reject) => {
    const onReady = (): void => {
      subscriber.off('end', onEnd);
      resolve();
    };
    const onEnd = (): void => {
      subscriber.off('ready', onReady);
      reject(new Error('subscriber connection closed'));
    };
    subscriber.once('ready', onReady);
    subscriber.once('end', onEnd);
    if (subscriber.status === 'wait') subscriber.connect().catch(() => undefined);
  });
}

/** A waiter for one lock: sleeps until woken by a release, a timeout or an abort. */
export class Waiter {
  private pendingWakeUp = false;
  private wakeUp: (() => void) | undefined;
  private failWaiting: ((error: Error) => void) | undefined;
  private failure: Error | undefined;

  constructor(
    /** Settles when the channel's subscription is confirmed, or failed (the waiter then polls). */
    readonly subscribed: Promise<void>,
    readonly leave: () => void,
    /** Subscribes the channel again if its subscription failed. */
    private readonly keepSubscribed: () => void,
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
    this.keepSubscribed();
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
