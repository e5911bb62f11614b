import type { Log } from '../../../infra/logging.js';
import type { RedisClient } from '../../../infra/redis.js';
import { orderEventsChannel } from '../keys.js';
import type { OrderChange, OrderState } from '../types.js';

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
 * Publishes changes as one message, a JSON array, on the one channel `order-events` (Redis
 * pub/sub: every instance with an open stream hears it). The changes of every call in one turn of
 * the event loop go out together (the batches of all shards one group commit wrote, a payment
 * beside them): one PUBLISH per turn rather than per order or per shard. During a sale that is
 * hundreds of orders per command, and on a Cluster each PUBLISH is also broadcast over the
 * cluster bus.
 */
export class RedisOrderEvents implements OrderEvents {
  private readonly channel: string;
  private lastWarning = 0;
  /** Changes of this turn, published once it ends (setImmediate: after every promise settled in it). */
  private pending: OrderChange[] = [];

  constructor(
    private readonly redis: RedisClient,
    keyPrefix: string,
    private readonly log: Log,
  ) {
    this.channel = orderEventsChannel(keyPrefix);
  }

  changed(changes: readonly OrderChange[]): void {
    if (changes.length === 0) return;
    if (this.pending.length === 0) setImmediate(() => this.publishPending());
    for (const change of changes) this.pending.push(change);
  }

  private publishPending(): void {
    const changes = this.pending;
    this.pending = [];
    this.redis.publish(this.channel, JSON.stringify(changes)).catch((error: unknown) => {
      // A lost event costs a subscriber latency only (the web page polls when a stream stays silent); said once a second at most.
      if (Date.now() - this.lastWarning < 1000) return;
      this.lastWarning = Date.now();
      this.log.warn({ err: error, orders: changes.length }, 'order events: publishing state changes failed');
    });
  }
}
