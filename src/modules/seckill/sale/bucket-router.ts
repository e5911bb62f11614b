import { OutcomeUnknown, TemporarilyUnavailable } from '../errors/index.js';
import { SECKILL_MESSAGES } from '../messages.js';
import type { OrderRequest, ReserveResult } from '../types.js';
import type { ReserveBatches } from './reserve-batches.js';
import type { BucketLayouts } from './sale-context.js';
import type { ReserveMode } from './sale-scripts.js';
import type { BucketTransfers } from './transfers.js';

/**
 * How long an order of a bucketed sale keeps refilling its empty home bucket before it is answered
 * "retry" (503): units are moving, or a dead refill's units wait for the sweep. Bounded in time,
 * not in rounds: under a burst one refill serves many waiting orders, and the first of them take
 * its units, so an order may need several rounds while the sale still has units.
 */
const REFILL_PATIENCE_MS = 2_000;

/** An order to the bucket that sells it: the voucher's one hash, or the user's home bucket, refilled when it is empty. */
export class BucketRouter {
  private readonly refillPatienceMs: number;

  constructor(
    private readonly layouts: BucketLayouts,
    private readonly transfers: BucketTransfers,
    private readonly batches: ReserveBatches,
    /**
     * The request deadline (REQUEST_DEADLINE_MS) of the orders routed here: an order of a bucketed
     * sale stops refilling its empty home bucket at three quarters of it (at most
     * REFILL_PATIENCE_MS), so that the router's 503 "retry" answers, not the deadline's "outcome
     * unknown" while the order is still being decided.
     */
    requestDeadlineMs = Infinity,
  ) {
    this.refillPatienceMs = Math.min(REFILL_PATIENCE_MS, Math.floor((requestDeadlineMs * 3) / 4));
  }

  /**
   * B = 1: one reserve. B > 1: reserve in the user's home bucket; when it is empty ("sold out"
   * there), refill it from the others and reserve again. Sold out only when the refill decided
   * every bucket empty with nothing pending (transfers.ts `soldOutBetween`); after
   * its patience (REFILL_PATIENCE_MS, less under a short request deadline) of refills without a decision (units moving, or a dead refill's units
   * waiting for the sweep), a 503 to retry: never a false "sold out". A failed reserve.lua call is
   * OutcomeUnknown: the order may have been accepted, so it is never answered as refused.
   */
  async reserve(order: OrderRequest, mode: ReserveMode): Promise<ReserveResult> {
    const home = this.layouts.homeOf(order.voucherId, order.userId);
    const giveUpAt = Date.now() + this.refillPatienceMs;
    for (;;) {
      let result: ReserveResult;
      try {
        result = await this.batches.reserve(order, mode, home);
      } catch (error) {
        throw new OutcomeUnknown(order.orderId, order.voucherId, error);
      }
      if (!home || result.outcome !== 'sold-out') return result;
      if (Date.now() >= giveUpAt) throw new TemporarilyUnavailable(SECKILL_MESSAGES.bucketsRefilling(), 1_000);
      if ((await this.transfers.refill(order.voucherId, home)) === 'sold-out') return result;
    }
  }
}
