/** The sale of a bucket run: one bucketed voucher, its answers told to the sold-out ledger. */
import { REFUSALS } from '../../../src/modules/seckill/index.js';
import type { RequestTiming } from '../../harness/index.js';
import { TimedSale, type SaleSetup } from '../harness/index.js';
import type { BucketBed } from './bed.js';

/**
 * The sale's answers, told to its SoldOutLedger (bench/sale/sold-out-ledger.ts) with each accepted order dated
 * by its Idempotency-Key's first attempt: a retry answered with the order (replayed) may carry a
 * unit decided back then, before a "sold out" that came in between. Also counts the 503s, those
 * saying the outcome is unknown apart (the request deadline answered while the order was still
 * being decided).
 */
export class BucketSale extends TimedSale {
  /** Per Idempotency-Key, when its first attempt was due. */
  private readonly firstDueOfKey = new Map<string, number>();
  unavailable = 0;
  outcomeUnknown = 0;

  override onResponse(status: number, body: string, timing?: RequestTiming): void {
    super.onResponse(status, body, timing);
    if (status === 503) this.unavailable += 1;
    if (status === 503 && body.includes('outcome of this order is unknown')) this.outcomeUnknown += 1;
    if (!timing) return;
    const firstDue = this.firstDue(timing);
    const voucher = this.vouchers[0]!;
    if (status === 200 && body.startsWith('{"success":true')) this.ledger.answered(voucher, 'accepted', firstDue);
    else if (status === 200 && body.includes(`"errorMsg":"${REFUSALS.soldOut}"`)) this.ledger.answered(voucher, 'sold-out', firstDue);
  }

  override onNoAnswer(timing: RequestTiming): void {
    this.firstDue(timing);
    super.onNoAnswer(timing);
  }

  /** Attempts of one key go one after another: the first answer (or failure) seen for a key is its first attempt's. */
  private firstDue(timing: RequestTiming): number {
    const key = timing.request?.headers?.['idempotency-key'];
    if (key === undefined) return timing.dueAt;
    const due = this.firstDueOfKey.get(key) ?? timing.dueAt;
    this.firstDueOfKey.set(key, due);
    return due;
  }
}

export function newSale(bed: BucketBed, voucherId: string, stock: number, rate: number, durationSeconds: number): SaleSetup & { sale: BucketSale } {
  return { vouchers: [voucherId], stock, sale: new BucketSale([voucherId], bed.buyers), rate, durationSeconds };
}
