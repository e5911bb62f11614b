import type { Message } from '../../../lib/messages/index.js';
import { Refusal } from './seckill-error.js';

/**
 * A refused purchase token or captcha: the user is logged in but not let through the sale's
 * gate. Routine under a flood of bad tokens: no stack trace.
 */
export class GateRefused extends Refusal {
  constructor(message: Message) {
    super(message, true);
  }
}
