import { Refusal } from './seckill-error.js';

/**
 * A request the state of its voucher, sale or order forbids now: an order not payable in its
 * state, a sale changed by someone else at the same moment, buckets fixed once sales began.
 */
export class Conflict extends Refusal {}
