/** One voucher sold out by distinct buyers through the stores, with what each answer said and when. */
import { homeBucket, OutcomeUnknown, TemporarilyUnavailable, type Sale } from '../../src/modules/seckill/index.js';
import { processCpuMicros } from '../harness/index.js';
import { SoldOutLedger } from '../sale/index.js';
import type { BucketedOptions, BucketedRow, LastPercent } from './bucketed-row.js';
import { round2 } from './round.js';

export interface SaleRun {
  ledger: SoldOutLedger;
  /** When each accepted answer arrived, in order. */
  acceptedAt: number[];
  /**
   * When each answer other than "sold out" arrived (accepted, or retry), in order. A "sold out"
   * answer is decided when no unit is left (checked), after the last unit was taken, even when it
   * arrives before that unit's answer: it is no request the stock took.
   */
  servedAt: number[];
  retries: number;
  startedAt: number;
  lastUnitAt: number;
  cpuAtStart: number[];
  cpuAtLastUnit: number[];
}

/**
 * Distinct buyers (user firstUser + k) order the voucher, `inFlight` per bucket at a time, until
 * each loop has been told "sold out"; a 503 (units still moving) is retried as a client would. Any
 * other answer fails the run. The CPU of `pids` is read at the start and when the last unit is taken.
 */
export async function sellOut(
  stores: Sale[],
  sale: { voucherId: string; stock: number; buckets: number; buyers: BucketedRow['buyers'] },
  options: BucketedOptions,
  firstUser: number,
  pids: number[] = [],
): Promise<SaleRun> {
  const { voucherId, stock, buckets } = sale;
  const nextBuyer = buyerIds(firstUser, sale.buyers === 'skewed' ? buckets : 1);
  const readCpu = () => pids.map((pid) => processCpuMicros(pid));
  const run: SaleRun = {
    ledger: new SoldOutLedger(),
    acceptedAt: [],
    servedAt: [],
    retries: 0,
    startedAt: performance.now(),
    lastUnitAt: Number.NaN,
    cpuAtStart: readCpu(),
    cpuAtLastUnit: [],
  };
  const deadline = run.startedAt + (options.timeoutMs ?? 300_000);
  let nextOrder = 0;
  const buy = async (store: Sale): Promise<'accepted' | 'sold-out'> => {
    const userId = nextBuyer();
    for (;;) {
      if (performance.now() > deadline) throw new Error(`voucher ${voucherId} not sold out in ${options.timeoutMs ?? 300_000} ms`);
      const orderId = String(firstUser * 10 + nextOrder++);
      const sentAt = performance.now();
      const outcome = await store.decider.decide({ orderId, userId, voucherId }).then(
        (result) => result.outcome,
        (error: unknown) => {
          if (error instanceof TemporarilyUnavailable || error instanceof OutcomeUnknown) return 'retry' as const; // what the API answers 503
          throw error;
        },
      );
      const now = performance.now();
      if (outcome === 'retry') {
        run.retries += 1;
        run.servedAt.push(now);
        continue;
      }
      if (outcome !== 'accepted' && outcome !== 'sold-out') throw new Error(`an order of a new buyer answered ${outcome}`);
      run.ledger.answered(voucherId, outcome, sentAt, now);
      if (outcome === 'accepted') {
        run.acceptedAt.push(now);
        run.servedAt.push(now);
        if (run.acceptedAt.length === stock) {
          run.cpuAtLastUnit = readCpu();
          run.lastUnitAt = now;
        }
      }
      return outcome;
    }
  };
  // Each loop buys for one new buyer after another until one of them is told "sold out".
  await Promise.all(
    Array.from({ length: options.inFlight * buckets }, async (_, loop) => {
      const store = stores[loop % stores.length]!;
      let outcome;
      do outcome = await buy(store);
      while (outcome === 'accepted');
    }),
  );
  return run;
}

/**
 * Buyer ids from `first` on, in sequence (`skewOver` 1: they home evenly), or, over `skewOver`
 * buckets, nine in ten of them homing to bucket 0 (ids that do not fit the pattern skipped).
 */
function buyerIds(first: number, skewOver: number): () => string {
  let next = first;
  let count = 0;
  return () => {
    if (skewOver <= 1) return String(next++);
    const toBucketZero = count++ % 10 !== 9;
    for (;;) {
      const id = String(next++);
      if ((homeBucket(id, skewOver) === 0) === toBucketZero) return id;
    }
  };
}

export function lastPercent(sale: SaleRun, reserveCalls: number[], moves: number[]): LastPercent {
  const units = Math.ceil(sale.acceptedAt.length / 100);
  const from = sale.acceptedAt[sale.acceptedAt.length - units - 1] ?? sale.startedAt;
  const to = sale.lastUnitAt;
  const within = (times: number[]) => times.filter((at) => at > from && at <= to).length;
  return {
    units,
    requests: within(sale.servedAt),
    reserves: within(reserveCalls),
    refills: within(moves),
    ms: round2(to - from),
    averageMs: round2((to - sale.startedAt) / 100),
  };
}
