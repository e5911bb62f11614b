import type { Message } from '../../../lib/messages/index.js';
import { Refusal, secondsToWait } from './seckill-error.js';

/**
 * Over a limit (the sale's admission rate, a user's or an address' requests, the gate's): come
 * back in `retryAfterMs`. The message gets `seconds`, the wait in whole seconds. Routine under
 * load: no stack trace.
 */
export class RateLimited extends Refusal {
  constructor(
    message: (params: { seconds: number }) => Message,
    readonly retryAfterMs: number,
  ) {
    super(message({ seconds: secondsToWait(retryAfterMs) }), true);
  }
}
