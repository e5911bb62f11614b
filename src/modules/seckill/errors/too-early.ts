import { SECKILL_MESSAGES } from '../messages.js';
import { Refusal, secondsToWait } from './seckill-error.js';

/** A purchase token asked for before the sale opens: come back when it does, in `retryAfterMs`. */
export class TooEarly extends Refusal {
  readonly retryAfterMs: number;

  constructor(begin: number, now: number) {
    const retryAfterMs = begin - now;
    super(SECKILL_MESSAGES.gateOpensIn({ seconds: secondsToWait(retryAfterMs), at: new Date(begin).toISOString() }));
    this.retryAfterMs = retryAfterMs;
  }
}
