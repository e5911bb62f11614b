import type { Log } from '../../../infra/logging.js';
import type { SaleSettlement } from '../sale/sale-settlement.js';
import type { OrderRepository } from '../record/order-repository.js';
import type { UnpaidQueue } from './unpaid-queue.js';
import type { DueOrder, QueuedOrder } from '../types.js';
import type { UnpaidCancellations } from './unpaid-cancellations.js';

/** What found an order due: the Redis release queue, RabbitMQ's release queue (SECKILL_QUEUE=rabbitmq) or the sweep. */
export type FoundBy = 'queue' | 'rabbitmq' | 'sweep';

export interface CancellerOptions {
  paymentWindowSeconds: number;
  /** Period of the sweep, the safety net (orders whose schedule was lost, Redis having failed). */
  intervalMs: number;
  batchSize?: number;
  /** Cancels the due orders a queue hands over, many per transaction. */
  cancellations: UnpaidCancellations;
  /** The Redis release queue, polled every `pollMs` (~150 ms): orders are cancelled on time, not at the next sweep. */
  releaseQueue?: { queue: UnpaidQueue; pollMs: number };
  log: Log;
  /**
   * Told of every order this instance cancelled (order-events.ts, the lateness metric): how long
   * after its due time, and what found it.
   */
  onCancelled?: (order: { orderId: string; userId: string; voucherId: string }, latenessMs: number, by: FoundBy) => void;
}

/**
 * Cancels orders left unpaid past the payment window and gives their unit back, exactly once,
 * even with every app instance running one of these:
 * 1. MySQL: `status unpaid → cancelled` and `stock + 1` in one transaction; the conditional
 *    update lets exactly one instance win per order (and makes a paid order a no-op).
 * 2. Redis: release.lua (stock + 1, buyer mark removed) guarded by a per-order marker, then
 *    `stock_released = 1`. A crash between 1 and 2 is finished by the next sweep of step 2.
 *
 * Three ways find the orders: the Redis release queue (unpaid-queue.ts), polled every ~150 ms,
 * whose claim script hands each due order to one instance; with SECKILL_QUEUE=rabbitmq, RabbitMQ's
 * release queue, whose consumer (broker/release-consumer.ts) hands its orders to `cancelDue`; and
 * the periodic sweep of MySQL, which catches what the queues lack.
 */
export class UnpaidOrderCanceller {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private polling: Promise<unknown> | undefined;

  constructor(
    private readonly orders: OrderRepository,
    private readonly settlement: SaleSettlement,
    private readonly options: CancellerOptions,
  ) {}

  /** The sweep and, with a queue, its polling. */
  start(): void {
    this.startSweep();
    this.startPolling();
  }

  startSweep(): void {
    this.timer ??= setInterval(() => {
      this.running ??= this.runOnce()
        .catch((error: unknown) => this.options.log.error({ err: error }, 'canceller: sweep failed'))
        .finally(() => (this.running = undefined));
    }, this.options.intervalMs).unref();
  }

  startPolling(): void {
    const pollMs = this.options.releaseQueue?.pollMs;
    if (pollMs === undefined || this.pollTimer) return;
    const tick = (): void => {
      this.polling = this.releaseDue()
        .catch((error: unknown) => this.options.log.warn({ err: error }, 'canceller: polling the release queue failed'))
        .finally(() => {
          this.polling = undefined;
          if (this.pollTimer) this.pollTimer = setTimeout(tick, pollMs).unref();
        });
    };
    this.pollTimer = setTimeout(tick, pollMs).unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    clearTimeout(this.pollTimer);
    this.pollTimer = undefined;
    await Promise.all([this.running, this.polling]);
  }

  /** One sweep; returns how many orders this call cancelled and released. */
  async runOnce(now = new Date()): Promise<{ cancelled: number; released: number }> {
    const limit = this.options.batchSize ?? 100;
    const windowMs = this.options.paymentWindowSeconds * 1000;
    const cutoff = new Date(now.getTime() - windowMs);
    let cancelled = 0;
    let released = 0;
    for (const order of await this.orders.listUnpaidCreatedBefore(cutoff, limit)) {
      const outcome = await this.cancelAndRelease({ orderId: order.id, userId: order.user_id, voucherId: order.voucher_id, slot: order.slot });
      if (outcome === 'not-unpaid') continue;
      cancelled += 1;
      if (outcome === 'released') released += 1;
      this.options.onCancelled?.(
        { orderId: order.id, userId: order.user_id, voucherId: order.voucher_id },
        Date.now() - (order.create_time.getTime() + windowMs),
        'sweep',
      );
    }
    for (const order of await this.orders.listCancelledUnreleased(limit)) {
      if (await this.releaseCancelled({ orderId: order.id, userId: order.user_id, voucherId: order.voucher_id, slot: order.slot })) released += 1;
    }
    if (cancelled > 0) this.options.log.info({ cancelled, released }, 'canceller: the sweep cancelled unpaid orders');
    return { cancelled, released };
  }

  /**
   * Claims the due orders of every shard and cancels them, a claimed batch per MySQL transaction;
   * returns how many this call cancelled. A batch whose cancellation fails stays in the queue and
   * is due again when its claim's lease ends (the sweep catches it too); orders found paid or
   * cancelled before leave the queue (the conditional cancellation is a no-op for them).
   */
  async releaseDue(): Promise<number> {
    const releaseQueue = this.options.releaseQueue;
    if (!releaseQueue) return 0;
    const limit = this.options.batchSize ?? 100;
    const counts = await Promise.all(
      this.settlement.keys.allShards().map(async (shard) => {
        let cancelled = 0;
        for (;;) {
          const claimed = await releaseQueue.queue.claim(shard, limit);
          if (claimed.length > 0) {
            cancelled += await this.cancelDue(claimed, 'queue');
            await releaseQueue.queue.done(
              shard,
              claimed.map((order) => order.member),
            );
          }
          if (claimed.length < limit) return cancelled;
        }
      }),
    );
    return counts.reduce((sum, count) => sum + count, 0);
  }

  /**
   * Due orders a queue handed over: those still unpaid are cancelled in MySQL in one transaction,
   * then each unit is given back in Redis (release.lua, once per order); returns how many this call
   * cancelled. Paid or already cancelled orders are left as they are. Throws when MySQL fails (the
   * caller keeps the orders and tries again; a second call is a no-op for what the first did).
   */
  async cancelDue(due: readonly DueOrder[], by: Exclude<FoundBy, 'sweep'>): Promise<number> {
    const { cancellations } = this.options;
    const byId = new Map(due.map((order) => [order.orderId, order]));
    const cancelled = (await cancellations.cancelMany([...byId.keys()])).map(({ orderId }) => byId.get(orderId)!);
    const released = await Promise.all(
      cancelled.map((order) =>
        this.settlement.release(order).then(
          () => order.orderId,
          (error: unknown) => this.releaseFailed(error, order.orderId),
        ),
      ),
    );
    await cancellations.markReleased(released.filter((orderId) => orderId !== undefined));
    for (const order of cancelled) this.options.onCancelled?.(order, Date.now() - order.dueMs, by);
    return cancelled.length;
  }

  /** Cancels the order in MySQL if it is still unpaid, then gives its unit back in Redis. */
  private async cancelAndRelease(order: QueuedOrder): Promise<'not-unpaid' | 'released' | 'release-pending'> {
    if (!(await this.orders.cancelUnpaid(order.orderId))) return 'not-unpaid';
    try {
      // Another instance's sweep may give the unit back first (the marker tells): then it counts it.
      return (await this.releaseCancelled(order)) ? 'released' : 'release-pending';
    } catch (error) {
      this.releaseFailed(error, order.orderId);
      return 'release-pending';
    }
  }

  /** Cancelled in MySQL, not released in Redis: the sweep's second step gives the unit back later. */
  private releaseFailed(error: unknown, orderId: string): undefined {
    this.options.log.warn({ err: error, orderId }, 'canceller: releasing a cancelled order in Redis failed; the sweep retries');
    return undefined;
  }

  /** release.lua (exactly once per order), then `stock_released = 1`; true if released by this call. */
  private async releaseCancelled(order: QueuedOrder): Promise<boolean> {
    const released = await this.settlement.release(order);
    await this.orders.markReleased(order.orderId);
    return released;
  }
}
