import { randomUUID } from 'node:crypto';
import { HttpError } from '../../http/errors.js';
import type { Log } from '../../infra/logging.js';
import type { RedisClient } from '../../infra/redis.js';
import { defineScripts, readLua } from '../../lib/redis-scripts/index.js';
import { orderEventsChannel, orderStreamsSemaphore } from './keys.js';
import { SECKILL_MESSAGES } from './messages.js';
import type { OrderState } from './types.js';

/** One order's new state, as published to its owner's channel. */
export interface OrderChange {
  orderId: string;
  userId: string;
  voucherId: string;
  state: OrderState;
}

/**
 * Where the sale reports order state changes after the acceptance (the worker's MySQL write,
 * payment, cancellation). Fire and forget: never throws, never delays the caller.
 */
export interface OrderEvents {
  /** Changes that happened together (a worker batch): reported in one message. */
  changed(changes: readonly OrderChange[]): void;
}

/** States after which an order's stream ends. */
export const FINAL_STATES: ReadonlySet<OrderState> = new Set<OrderState>(['paid', 'used', 'cancelled', 'refunding', 'refunded']);

/** Order of the states in one order's life: a stream never goes back (a late `queued` after `created` is dropped). */
export const STATE_RANK: Record<OrderState, number> = { queued: 0, created: 1, paid: 2, cancelled: 2, used: 3, refunding: 3, refunded: 4 };

/**
 * Publishes the changes of one call as one message, a JSON array, on the one channel
 * `order-events` (Redis pub/sub: every instance with an open stream hears it). One PUBLISH per
 * worker batch rather than per order: during a sale that is hundreds of orders per command, and
 * on a Cluster each PUBLISH is also broadcast over the cluster bus.
 */
export class RedisOrderEvents implements OrderEvents {
  private readonly channel: string;
  private lastWarning = 0;

  constructor(
    private readonly redis: RedisClient,
    keyPrefix: string,
    private readonly log: Log,
  ) {
    this.channel = orderEventsChannel(keyPrefix);
  }

  changed(changes: readonly OrderChange[]): void {
    if (changes.length === 0) return;
    this.redis.publish(this.channel, JSON.stringify(changes)).catch((error: unknown) => {
      // A lost event costs a subscriber latency only (the web page polls when a stream stays silent); said once a second at most.
      if (Date.now() - this.lastWarning < 1000) return;
      this.lastWarning = Date.now();
      this.log.warn({ err: error, orders: changes.length }, 'order events: publishing state changes failed');
    });
  }
}

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
      throw new HttpError(503, SECKILL_MESSAGES.orderEventsUnavailable(), { 'retry-after': '1' });
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

interface SlotScripts {
  /** 1 taken, 0 all in use; with slots 0, renews the id's lease. */
  take(key: string, streamId: string, slots: number, leaseMs: number): Promise<number>;
}

/** A held stream slot: renew it within its lease, release it when the stream ends. */
export interface StreamSlot {
  renew(): Promise<void>;
  release(): Promise<void>;
}

/**
 * Bounds a user's open event streams over all instances: a sorted set of leases per user
 * (lua/stream-slot.lua), renewed with each heartbeat, so a crashed instance's slots come back.
 */
export class StreamSlots {
  private readonly scripts: SlotScripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly slotsPerUser: number,
    private readonly leaseMs: number,
  ) {
    this.scripts = defineScripts<SlotScripts>(redis, 'orderStreams', { take: { keys: 1, lua: readLua(import.meta.url, 'lua/stream-slot.lua') } });
  }

  /** A slot, or null when the user has all of theirs open. */
  async take(userId: string): Promise<StreamSlot | null> {
    const key = orderStreamsSemaphore(userId);
    const id = randomUUID();
    if ((await this.scripts.take(key, id, this.slotsPerUser, this.leaseMs)) !== 1) return null;
    return {
      renew: async () => {
        await this.scripts.take(key, id, 0, this.leaseMs);
      },
      release: async () => {
        await this.redis.zrem(key, id);
      },
    };
  }
}
