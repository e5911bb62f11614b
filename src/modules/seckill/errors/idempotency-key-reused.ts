import { SECKILL_MESSAGES } from '../messages.js';
import { Refusal } from './seckill-error.js';

/** An Idempotency-Key the user already bound to another voucher: a key buys one order of one voucher. */
export class IdempotencyKeyReused extends Refusal {
  constructor(readonly boundTo: string) {
    super(SECKILL_MESSAGES.idempotencyKeyReused({ voucherId: boundTo }));
  }
}
