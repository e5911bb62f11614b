import { Refusal } from './seckill-error.js';

/** A request whose values break a rule of the sale (an end before the begin, stock below what is sold…). */
export class InvalidInput extends Refusal {}
