import { TemporarilyUnavailable } from '../errors/index.js';
import type { RedisClient } from '../../../infra/redis.js';
import { orderEventsChannel } from '../keys.js';
import { SECKILL_MESSAGES } from '../messages.js';
import type { OrderChange } from '../types.js';

type Listener = (change: OrderChange) => void;

/**
 * The subscriber side in one instance: one connection of its own (a subscribed connection can do
 * nothing else), subscribed to the channel while this instance has at least one open stream, and
 * handing each change to the streams of its order's owner. SUBSCRIBE and UNSUBSCRIBE go one at a
 * time: the last stream closing while the next one opens must not race an UNSUBSCRIBE past the
 * SUBSCRIBE on the connection's subscriber state.
 */
export class OrderEventHub {
  private subscriber: RedisClient | undefined;
  private subscribed = false;
  /** Open streams' listeners by the user whose orders they watch. */
  private readonly listeners = new Map<string, Set<Listener>>();
  private pending: Promise<unknown> = Promise.resolve();
  private readonly channel: string;

  constructor(
    private readonly redis: RedisClient,
    keyPrefix: string,
  ) {
    this.channel = orderEventsChannel(keyPrefix);
  }

  /** Calls `listener` with each change of the user's orders until the returned function is called. */
  async subscribe(userId: string, listener: Listener): Promise<() => Promise<void>> {
    let set = this.listeners.get(userId);
    if (!set) {
      set = new Set();
      this.listeners.set(userId, set);
    }
    set.add(listener);
    try {
      await this.inTurn(async () => {
        if (this.subscribed || this.listeners.size === 0) return;
        await this.connection().subscribe(this.channel);
        this.subscribed = true;
      });
    } catch {
      await this.leave(userId, listener);
      // The page then polls: a stream is a convenience, never the only way to an order's state.
      throw new TemporarilyUnavailable(SECKILL_MESSAGES.orderEventsUnavailable(), 1_000);
    }
    return () => this.leave(userId, listener);
  }

  /** Runs `command` after every earlier SUBSCRIBE / UNSUBSCRIBE of this hub. */
  private inTurn<T>(command: () => Promise<T>): Promise<T> {
    const result = this.pending.then(command);
    this.pending = result.catch(() => undefined);
    return result;
  }

  async close(): Promise<void> {
    this.listeners.clear();
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    this.subscribed = false;
    if (subscriber) await subscriber.quit().catch(() => subscriber.disconnect());
  }

  private connection(): RedisClient {
    if (this.subscriber) return this.subscriber;
    const subscriber = this.redis.duplicate();
    subscriber.on('message', (channel: string, message: string) => this.deliver(channel, message));
    this.subscriber = subscriber;
    return subscriber;
  }

  private deliver(channel: string, message: string): void {
    if (channel !== this.channel) return;
    let changes: unknown;
    try {
      changes = JSON.parse(message);
    } catch {
      return;
    }
    if (!Array.isArray(changes)) return;
    for (const change of changes as OrderChange[]) {
      const set = this.listeners.get(change.userId);
      if (set) for (const listener of set) listener(change);
    }
  }

  private async leave(userId: string, listener: Listener): Promise<void> {
    const set = this.listeners.get(userId);
    if (!set?.delete(listener) || set.size > 0) return;
    this.listeners.delete(userId);
    await this.inTurn(async () => {
      // A stream may have opened meanwhile: it keeps the subscription.
      if (this.listeners.size > 0 || !this.subscribed) return;
      this.subscribed = false;
      await this.subscriber?.unsubscribe(this.channel);
    }).catch(() => undefined);
  }
}
