import { HttpError, notFound } from '../../http/errors.js';
import type { Message } from '../../lib/messages/index.js';
import { unavailableDependency } from '../../infra/transient-errors.js';
import { SECKILL_MESSAGES } from './messages.js';
import type { ReserveResult } from './types.js';

/** A refusal the user can read; answered with HTTP 200 and success: false, as hmdp does. */
export class SaleRefused extends HttpError {
  readonly outcome: 'not-started' | 'ended' | 'sold-out' | 'already-bought' | 'busy' | 'frozen' | 'suspended';

  constructor(outcome: SaleRefused['outcome'], message: Message) {
    // A refusal is an answer, not a fault, and most requests of a flash sale get one ("sold
    // out"): skip the stack trace, the costliest part of making an Error (2 % of the server's
    // CPU in the seckill benchmark's profile).
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(200, message);
    Error.stackTraceLimit = limit;
    this.outcome = outcome;
  }
}

/**
 * The reserve script was sent and no answer came (Redis stalled, timed out or dropped the
 * connection): the order may have been accepted. Never answered as a refusal: 503, with the order
 * id it would have and where to look it up.
 */
export class OutcomeUnknown extends HttpError {
  readonly outcome = 'unknown';

  constructor(orderId: string, voucherId: string, cause: unknown) {
    const dependency = unavailableDependency(cause)?.dependency ?? 'a dependency';
    super(503, SECKILL_MESSAGES.outcomeUnknown({ dependency, orderId, voucherId }), { 'retry-after': '1' });
    this.cause = cause;
  }
}

/** What the request deadline answers on the order route, whose reserve may have run by then. */
export const orderDeadlineMessage = (voucherId: string): Message => SECKILL_MESSAGES.orderDeadline({ voucherId });

/** Throws the refusal the user reads for every outcome but `accepted` and `replayed`. */
export function throwIfRefused(result: ReserveResult, voucherId: string): void {
  switch (result.outcome) {
    case 'accepted':
    case 'replayed':
      return;
    case 'not-started':
      throw new SaleRefused('not-started', SECKILL_MESSAGES.notStarted());
    case 'ended':
      throw new SaleRefused('ended', SECKILL_MESSAGES.ended());
    case 'sold-out':
      throw new SaleRefused('sold-out', SECKILL_MESSAGES.soldOut());
    case 'already-bought':
      throw new SaleRefused('already-bought', result.limit > 1 ? SECKILL_MESSAGES.atLimit({ limit: result.limit }) : SECKILL_MESSAGES.alreadyBought());
    case 'unknown-voucher':
      throw notFound(SECKILL_MESSAGES.unknownVoucher({ id: voucherId }));
    // A reconciliation repair freezes the voucher for a moment (npm run reconcile -- --repair).
    case 'frozen':
      throw new SaleRefused('frozen', SECKILL_MESSAGES.frozen());
    case 'suspended':
      throw new SaleRefused('suspended', SECKILL_MESSAGES.suspended());
  }
}
