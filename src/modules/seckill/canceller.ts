import type { Log } from '../../infra/logging.js';
import type { SaleStore } from './sale-store.js';
import type { OrderRepository } from './order-repository.js';

export interface CancellerOptions {
  paymentWindowSeconds: number;
  intervalMs: number;
  batchSize?: number;
  log: Log;
}

/**
 * Cancels orders left unpaid past the payment window and gives their unit back, exactly once,
 * even with every app instance running one of these:
 * 1. MySQL: `status unpaid → cancelled` and `stock + 1` in one transaction; the conditional
 *    update lets exactly one instance win per order.
 * 2. Redis: release.lua (stock + 1, buyer mark removed) guarded by a per-order marker, then
 *    `stock_released = 1`. A crash between 1 and 2 is finished by the next sweep of step 2.
 */
export class UnpaidOrderCanceller {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly orders: OrderRepository,
    private readonly store: SaleStore,
    private readonly options: CancellerOptions,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => {
      this.running ??= this.runOnce()
        .catch((error: unknown) => this.options.log.error({ err: error }, 'canceller: sweep failed'))
        .finally(() => (this.running = undefined));
    }, this.options.intervalMs).unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One sweep; returns how many orders this call cancelled and released. */
  async runOnce(now = new Date()): Promise<{ cancelled: number; released: number }> {
    const limit = this.options.batchSize ?? 100;
    const cutoff = new Date(now.getTime() - this.options.paymentWindowSeconds * 1000);
    let cancelled = 0;
    for (const order of await this.orders.listUnpaidCreatedBefore(cutoff, limit)) {
      if (await this.orders.cancelUnpaid(order.id)) cancelled += 1;
    }
    let released = 0;
    for (const order of await this.orders.listCancelledUnreleased(limit)) {
      if (await this.store.release({ orderId: order.id, userId: order.user_id, voucherId: order.voucher_id })) released += 1;
      await this.orders.markReleased(order.id);
    }
    if (cancelled > 0) this.options.log.info({ cancelled, released }, 'canceller: cancelled unpaid orders');
    return { cancelled, released };
  }
}
