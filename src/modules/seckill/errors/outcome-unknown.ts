import type { Message } from '../../../lib/messages/index.js';
import { unavailableDependency } from '../../../infra/transient-errors.js';
import { SECKILL_MESSAGES } from '../messages.js';
import { SeckillError } from './seckill-error.js';

/**
 * The reserve script was sent and no answer came (Redis stalled, timed out or dropped the
 * connection): the order may have been accepted. Never a refusal: the answer names the order id
 * it would have and where to look it up, and asks the client to come back in a second.
 */
export class OutcomeUnknown extends SeckillError {
  readonly outcome = 'unknown';
  readonly retryAfterMs = 1_000;

  constructor(
    readonly orderId: string,
    readonly voucherId: string,
    cause: unknown,
  ) {
    const dependency = unavailableDependency(cause)?.dependency ?? 'a dependency';
    super(SECKILL_MESSAGES.outcomeUnknown({ dependency, orderId, voucherId }));
    this.cause = cause;
  }
}

/**
 * What the request deadline answers on the order route, whose reserve may have run by then: with
 * the order id once one was issued (as OutcomeUnknown's answer names it), never one before.
 */
export const orderDeadlineMessage = (voucherId: string, orderId?: string): Message =>
  orderId === undefined ? SECKILL_MESSAGES.orderDeadline({ voucherId }) : SECKILL_MESSAGES.orderDeadlineWithId({ voucherId, orderId });
