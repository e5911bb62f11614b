/**
 * What the buyers of a sale were told, per voucher and when, and the two checks that need those
 * times: every unit sold and no false sold out.
 */
import type { Check } from './check.js';

/** What one request of a sale got, as the sold-out checks count it. */
export type SaleAnswer = 'accepted' | 'sold-out' | 'other';

/**
 * What the buyers of a sale were told, per voucher, with the times that make the "no false sold
 * out" check sound: when each request went out and when each "sold out" answer came back, on this
 * process's one clock (performance.now()). Fed by the HTTP scenarios (Sale) and by
 * `npm run bench -- hot-voucher`'s bucketed sales.
 */
export class SoldOutLedger {
  private readonly byVoucher = new Map<string, VoucherAnswers>();

  /** A request for `voucher` sent at `sentAt` was answered now (or at `receivedAt`). */
  answered(voucher: string, answer: SaleAnswer, sentAt: number, receivedAt = performance.now()): void {
    let tally = this.byVoucher.get(voucher);
    if (!tally) {
      tally = { accepted: 0, soldOut: 0, firstSoldOutAt: undefined, acceptedAfterSoldOut: 0 };
      this.byVoucher.set(voucher, tally);
    }
    if (answer === 'accepted') {
      tally.accepted += 1;
      // Set once, never moved: a request answered before the first "sold out" arrived was sent before it.
      if (tally.firstSoldOutAt !== undefined && sentAt > tally.firstSoldOutAt) tally.acceptedAfterSoldOut += 1;
    } else if (answer === 'sold-out') {
      tally.soldOut += 1;
      tally.firstSoldOutAt ??= receivedAt;
    }
  }

  of(voucher: string): VoucherAnswers | undefined {
    return this.byVoucher.get(voucher);
  }
}

export interface VoucherAnswers {
  accepted: number;
  /** "Sold out" answers. */
  soldOut: number;
  /** When the first "sold out" answer arrived. */
  firstSoldOutAt: number | undefined;
  /** Accepted orders whose request was sent after the first "sold out" answer had arrived. */
  acceptedAfterSoldOut: number;
}

/**
 * "Every unit sold" and "no false sold out", per voucher, from what its buyers were told
 * (`ledger`), the units left at the end (`left`: stock not sold, in Redis or MySQL, units on their
 * way between buckets included) and the units given back during the sale (`givenBack`: cancelled
 * orders; a raise of the stock counts here too, where a scenario makes one).
 *
 * Why they are sound, that is, never fail a correct sale: a "sold out" answer is decided before it
 * arrives, at an instant when no unit was left anywhere (B = 1: the stock read 0; B > 1: every
 * bucket empty with nothing pending, transfers.ts `soldOutBetween`; the sold-out memory holds only
 * such a reading), and the units left can only rise by being given back. So, for a voucher that
 * answered "sold out" at least once (its buyers outnumbered its units):
 * - every unit sold: at the end at most the units given back are left; more means units were
 *   there when a buyer was told there were none, and nobody bought them;
 * - no false sold out: a request sent after a "sold out" answer had arrived is decided after that
 *   instant, so it can be accepted only for a unit given back in between: such acceptances are at
 *   most the units given back.
 * (Also sold out when every unit was accepted: then nothing may be left.) What neither sees: a
 * false "sold out" whose unit went to a request sent before that answer arrived; telling it from
 * a true one would need Redis' own order of the decisions.
 */
export function soldOutChecks(
  ledger: SoldOutLedger,
  vouchers: readonly string[],
  stock: number,
  left: ReadonlyMap<string, number | undefined>,
  givenBack: ReadonlyMap<string, number> = new Map(),
): Check[] {
  const demanded = vouchers.filter((voucher) => {
    const answers = ledger.of(voucher);
    return answers !== undefined && (answers.soldOut > 0 || answers.accepted >= stock);
  });
  const unsold = demanded.filter((voucher) => (left.get(voucher) ?? 0) > (givenBack.get(voucher) ?? 0));
  const early = vouchers.filter((voucher) => (ledger.of(voucher)?.acceptedAfterSoldOut ?? 0) > (givenBack.get(voucher) ?? 0));
  const lateAccepted = vouchers.reduce((sum, voucher) => sum + (ledger.of(voucher)?.acceptedAfterSoldOut ?? 0), 0);
  return [
    {
      name: 'every unit sold',
      pass: unsold.length === 0,
      detail:
        unsold.length === 0
          ? `${demanded.length} vouchers sold out or fully sold, none with a unit left`
          : `${unsold.length} of ${demanded.length} sold-out vouchers have units left, e.g. ${unsold[0]!}: ${left.get(unsold[0]!) ?? '?'} left`,
    },
    {
      name: 'no false sold out',
      pass: early.length === 0,
      detail:
        early.length === 0
          ? `no order accepted after its voucher answered "sold out" beyond the units given back (${lateAccepted} after, all for units given back)`
          : `${early.length} vouchers accepted orders sent after they had answered "sold out", e.g. ${early[0]!}: ${ledger.of(early[0]!)?.acceptedAfterSoldOut ?? 0}`,
    },
  ];
}
