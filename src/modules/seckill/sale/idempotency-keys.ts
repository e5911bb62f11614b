import { IDEMPOTENCY_TTL_MS } from '../keys.js';
import type { OrderRequest } from '../types.js';
import type { SaleContext } from './sale-context.js';

/** A bound Idempotency-Key: `bound` to this voucher now or before, or to another voucher. */
export type KeyBinding = { bound: true } | { bound: false; voucherId: string };

/** A user's Idempotency-Keys: each bound to one voucher, its order id kept by reserve.lua in the voucher's shard. */
export class IdempotencyKeys {
  constructor(private readonly sale: Pick<SaleContext, 'redis' | 'keys' | 'layouts'>) {}

  /**
   * Binds an Idempotency-Key of the user to a voucher for IDEMPOTENCY_TTL_MS, before reserve.lua
   * runs: the key's order id lives in the voucher's shard, and another voucher may be on another
   * shard (Redis Cluster), so one key used for two vouchers is caught here, per user.
   */
  async bind(userId: string, key: string, voucherId: string): Promise<KeyBinding> {
    const binding = this.sale.keys.idempotencyBinding(userId, key);
    const earlier = (await this.sale.redis.call('SET', binding, voucherId, 'PX', IDEMPOTENCY_TTL_MS, 'NX', 'GET')) as string | null;
    return earlier === null || earlier === voucherId ? { bound: true } : { bound: false, voucherId: earlier };
  }

  /** The key's order was given back before its request answered (MySQL refused it): a retry decides afresh. */
  async forget(order: OrderRequest): Promise<void> {
    if (order.idempotencyKey === undefined) return;
    const { redis, keys, layouts } = this.sale;
    await redis.del(keys.idempotentOrder(order.voucherId, order.userId, order.idempotencyKey, layouts.homeOf(order.voucherId, order.userId)));
  }
}
