import type { RedisClient } from '../../../infra/redis.js';
import { defineScripts, readLua, type Scripts } from '../../../lib/redis-scripts/index.js';
import { unpaidDueKey, type SaleKeys } from '../keys.js';
import type { ClaimedOrder, NewOrder } from '../types.js';

interface ReleaseScripts {
  /** Orders newly scheduled; per order its acceptance time (ms, or '') and its member. */
  scheduleUnpaid(dueKey: string, windowMs: number, ...acceptedAndMembers: string[]): Promise<number>;
  /** member, due (ms), member, due, ... */
  claimUnpaid(dueKey: string, limit: number, leaseMs: number): Promise<string[]>;
}

const lua = (name: string): string => readLua(import.meta.url, `lua/${name}.lua`);

/**
 * The release queue: orders written to MySQL, by the end of their payment window, one sorted set
 * per shard (`{seckill:N}:unpaid-due`, see keys.ts). Written when an order reaches MySQL (see
 * `DueTrackedOrders`; with SECKILL_QUEUE=rabbitmq only when the broker does not confirm the
 * order's deadline, broker/unpaid-delays.ts), claimed by every instance's canceller a few times a second.
 */
export class UnpaidQueue {
  private readonly scripts: Scripts<ReleaseScripts>;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: SaleKeys,
    private readonly paymentWindowMs: number,
    /** How long a claimed order stays hidden from other instances before it is due again. */
    readonly leaseMs = 5_000,
  ) {
    this.scripts = defineScripts<ReleaseScripts>(redis, 'seckillRelease', {
      scheduleUnpaid: { keys: 1, lua: lua('schedule-unpaid') },
      claimUnpaid: { keys: 1, lua: lua('claim-unpaid') },
    });
  }

  /** Schedules orders just written for cancellation at the end of their payment window, counted from their acceptance. */
  async schedule(orders: readonly NewOrder[]): Promise<void> {
    const perShard = new Map<number, string[]>();
    for (const order of orders) {
      const shard = this.keys.shardOf(order.voucherId);
      const member = `${order.orderId}:${order.userId}:${order.voucherId}:${order.slot ?? 1}`;
      const args = perShard.get(shard);
      if (args) args.push(String(order.acceptedMs ?? ''), member);
      else perShard.set(shard, [String(order.acceptedMs ?? ''), member]);
    }
    await Promise.all([...perShard].map(([shard, args]) => this.scripts.scheduleUnpaid(unpaidDueKey(shard), this.paymentWindowMs, ...args)));
  }

  /** Takes up to `limit` due orders of the shard for this instance, for `leaseMs`. */
  async claim(shard: number, limit: number): Promise<ClaimedOrder[]> {
    const reply = await this.scripts.claimUnpaid(unpaidDueKey(shard), limit, this.leaseMs);
    const claimed: ClaimedOrder[] = [];
    for (let i = 0; i + 1 < reply.length; i += 2) {
      const member = reply[i]!;
      const [orderId = '', userId = '', voucherId = '', slot = '1'] = member.split(':');
      claimed.push({ member, orderId, userId, voucherId, slot: Number(slot), dueMs: Number(reply[i + 1]) });
    }
    return claimed;
  }

  /** The order is settled (cancelled now, or paid or cancelled before): it leaves the queue. */
  async done(shard: number, members: readonly string[]): Promise<void> {
    if (members.length > 0) await this.redis.zrem(unpaidDueKey(shard), ...members);
  }

  /** Orders waiting in the shard's queue (claimed ones included). */
  async size(shard: number): Promise<number> {
    return this.redis.zcard(unpaidDueKey(shard));
  }
}
