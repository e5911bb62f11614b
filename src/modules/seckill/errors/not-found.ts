import { SECKILL_MESSAGES } from '../messages.js';
import { Refusal } from './seckill-error.js';

/** What the request names does not exist (for this user): a voucher, an order. */
export class NotFound extends Refusal {}

/** An id that is no seckill voucher. */
export class UnknownVoucher extends NotFound {
  constructor(readonly voucherId: string) {
    super(SECKILL_MESSAGES.unknownVoucher({ id: voucherId }));
  }
}
