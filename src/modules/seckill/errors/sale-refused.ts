import type { Message } from '../../../lib/messages/index.js';
import { SECKILL_MESSAGES } from '../messages.js';
import type { ReserveResult } from '../types.js';
import { UnknownVoucher } from './not-found.js';
import { Refusal } from './seckill-error.js';

/**
 * The sale's own "no" to an order, which the user reads: answered as a readable refusal, as hmdp
 * does. Most requests of a flash sale get one ("sold out"): routine, no stack trace.
 */
export class SaleRefused extends Refusal {
  constructor(
    readonly outcome: 'not-started' | 'ended' | 'sold-out' | 'already-bought' | 'busy' | 'frozen' | 'suspended',
    message: Message,
  ) {
    super(message, true);
  }
}

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
      throw new UnknownVoucher(voucherId);
    // A reconciliation repair freezes the voucher for a moment (npm run reconcile -- --repair).
    case 'frozen':
      throw new SaleRefused('frozen', SECKILL_MESSAGES.frozen());
    case 'suspended':
      throw new SaleRefused('suspended', SECKILL_MESSAGES.suspended());
  }
}
