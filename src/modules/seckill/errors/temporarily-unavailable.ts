import type { Message } from '../../../lib/messages/index.js';
import { SeckillError } from './seckill-error.js';

/**
 * Not now, and nothing was decided: units still moving between a sale's buckets, the order
 * events' subscription failing. The client may retry in `retryAfterMs`.
 */
export class TemporarilyUnavailable extends SeckillError {
  constructor(
    message: Message,
    readonly retryAfterMs = 1_000,
  ) {
    super(message);
  }
}
