import { setTimeout as sleep } from 'node:timers/promises';
import type { RedisClient } from '../../../infra/redis.js';
import { TemporarilyUnavailable } from '../errors/index.js';
import type { BucketRef, SaleKeys } from '../keys.js';
import { SECKILL_MESSAGES } from '../messages.js';
import { bucketsOf, shareOf } from './transfers.js';
import type { ControlOutcome, SaleControl, SaleScripts } from './sale-scripts.js';

/**
 * An administrator's change written into a voucher sold from B > 1 buckets (issue 30; the caller,
 * admin/sale-controls.ts, holds the voucher's lock and orders the MySQL and Redis writes).
 *
 * Each bucket keeps `total`, its part of the sale's total: the sale's total in Redis is the sum
 * over its buckets, and sold = Σ total − Σ (stock + pending). Every step below is control.lua on
 * one bucket, which moves that bucket's total and stock by the same amount, atomically and to an
 * absolute value (a repeat changes nothing more); transfers move stock and pending, never totals,
 * and orders and releases move stock alone. So after every step, and after a crash between two
 * buckets, Σ total = sold + Σ (stock + pending) holds, and the next control (a retry, or any
 * other) starts from the total Redis has reached:
 *
 * - A raise cut midway (MySQL written first) leaves Redis's total below MySQL's: fewer units for
 *   sale than MySQL holds, never more. Its retry raises by what is missing.
 * - A lower cut midway (Redis first, MySQL unchanged) leaves Redis's total between the new total
 *   and MySQL's: again below MySQL. Its retry takes what is left to take, then writes MySQL; a raise
 *   instead gives the units back. Reconcile, until either, sees Redis holding fewer units than
 *   MySQL, and a repair rewrites the stock from MySQL (it drops the buckets' totals, as repair.lua
 *   drops the hash's: the next control seeds them from MySQL's total again).
 *
 * A lower takes units only from the buckets' stock, each take refused by its bucket when orders or
 * a refill got there first (then read again and planned again): a unit it removed is out of the
 * stock in the same step, so no order can sell it. Never from pending (units of a refill on their
 * way; they arrive within milliseconds, or the sweep returns them within ~15 s): a lower that needs
 * them waits up to LOWER_PATIENCE_MS, then gives back what it took and answers 503. Refused below
 * what is sold (orders may win the race while it runs): it gives back what it took first.
 */

/** How long a lower waits for units pending between buckets before it gives up (503, nothing changed). */
const LOWER_PATIENCE_MS = 1_000;
/** How long it waits before reading the buckets again. */
const PENDING_WAIT_MS = 20;

/** One bucket as a control reads it (one HMGET). */
interface BucketState {
  bucket: BucketRef;
  exists: boolean;
  stock: number;
  pending: number;
  /** The bucket's part of the sale's total; null where none was written (a sale published before totals, or after a repair). */
  total: number | null;
}

/** A bucket that holds the sale, with its part of the total. */
type Present = BucketState & { exists: true; total: number };

export class BucketControls {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: SaleKeys,
    private readonly scripts: SaleScripts,
  ) {}

  /**
   * The change in every bucket of the voucher: its stock first (raise or lower), then pause,
   * window and limit in each bucket, then the window in the layout record. `mysqlTotal` is MySQL's
   * total before the change (seeds the buckets' totals where missing). Answers as control.lua does,
   * over the whole sale: `stock` the units not sold (stock and pending), `total` Redis's total.
   */
  async apply(voucherId: string, buckets: number, mysqlTotal: number, change: SaleControl): Promise<ControlOutcome> {
    const present = await this.seeded(voucherId, buckets, mysqlTotal);
    if (present.length === 0) return { outcome: 'not-published' };
    if (change.total !== undefined) {
      const total = sum(present, (state) => state.total);
      if (change.total > total) await this.raise(voucherId, present, change.total - total);
      if (change.total < total) {
        const refused = await this.lower(voucherId, present, change.total);
        if (refused) return refused;
      }
    }
    // Each bucket already has its total (seeded above): totalIfMissing is never used here.
    const fields: SaleControl = { begin: change.begin, end: change.end, suspended: change.suspended, limitPerUser: change.limitPerUser };
    if (Object.values(fields).some((value) => value !== undefined)) {
      await Promise.all(present.map((state) => this.scripts.controlBucket({ voucherId, bucket: state.bucket, totalIfMissing: state.total, change: fields })));
    }
    if (change.begin !== undefined || change.end !== undefined) await this.moveLayoutWindow(voucherId, change);
    const after = await this.present(voucherId, buckets);
    return { outcome: 'applied', stock: sum(after, (state) => state.stock + state.pending), total: sum(after, (state) => state.total) };
  }

  /** Each bucket: stock, pending and its part of the total. */
  private async read(voucherId: string, buckets: number): Promise<BucketState[]> {
    const replies = await Promise.all(
      bucketsOf(buckets).map((bucket) => this.redis.hmget(this.keys.bucket(voucherId, bucket).voucher, 'stock', 'pending', 'total')),
    );
    return replies.map(([stock, pending, total], index) => ({
      bucket: { index, of: buckets },
      exists: stock !== null,
      stock: Number(stock ?? 0),
      pending: Number(pending ?? 0),
      total: total === null ? null : Number(total),
    }));
  }

  /** The buckets Redis holds, each with its total (a bucket lost by Redis is left out: its next order publishes it from MySQL). */
  private async present(voucherId: string, buckets: number): Promise<Present[]> {
    return (await this.read(voucherId, buckets)).filter((state): state is Present => state.exists && state.total !== null);
  }

  /**
   * The buckets with their totals, seeding those without one so that the sum is MySQL's total:
   * each but the last gets its units as read (any value would do: only the sum counts), the last
   * the rest, and only after the others. A crash midway leaves the last without one, and the
   * next call gives it the rest again.
   */
  private async seeded(voucherId: string, buckets: number, mysqlTotal: number): Promise<Present[]> {
    const states = (await this.read(voucherId, buckets)).filter((state) => state.exists);
    const missing = states.filter((state) => state.total === null);
    if (missing.length === 0) return states as Present[];
    const last = missing.pop()!;
    const seeds = missing.map((state) => ({ state, total: state.stock + state.pending }));
    await Promise.all(seeds.map(({ state, total }) => this.scripts.controlBucket({ voucherId, bucket: state.bucket, totalIfMissing: total, change: {} })));
    const rest = mysqlTotal - sum(states, (state) => state.total ?? 0) - sum(seeds, (seed) => seed.total);
    await this.scripts.controlBucket({ voucherId, bucket: last.bucket, totalIfMissing: rest, change: {} });
    return this.present(voucherId, buckets);
  }

  /**
   * `units` more for sale, split evenly over the buckets (the remainder to the lowest indexes):
   * each receiving bucket's total and stock rise together, its version (`restocks`) with them, so
   * the sold-out rule across buckets and the sold-out memory see units came back.
   */
  private async raise(voucherId: string, present: readonly Present[], units: number): Promise<void> {
    const shares = present.map((state, at) => ({ state, share: shareOf(units, { index: at, of: present.length }) }));
    await Promise.all(
      shares
        .filter(({ share }) => share > 0)
        .map(({ state, share }) =>
          this.scripts.controlBucket({ voucherId, bucket: state.bucket, totalIfMissing: state.total, change: { total: state.total + share } }),
        ),
    );
  }

  /**
   * Takes units from the buckets' stock until Redis's total is `target`: each round plans takes
   * from the buckets as read (richest first), and each take is one bucket's absolute new total,
   * refused there if its stock fell below the take meanwhile. Returns a refusal (after giving back
   * what it took) when `target` is below what is sold; throws 503 (after giving back) when it is
   * not done after LOWER_PATIENCE_MS, the units it needs still pending between buckets.
   */
  private async lower(voucherId: string, start: readonly Present[], target: number): Promise<ControlOutcome | undefined> {
    const giveUpAt = Date.now() + LOWER_PATIENCE_MS;
    for (;;) {
      const now = await this.present(voucherId, start[0]!.bucket.of);
      const total = sum(now, (state) => state.total);
      if (total <= target) return undefined;
      const sold = total - sum(now, (state) => state.stock + state.pending);
      if (target < sold) {
        await this.giveBack(voucherId, start, now);
        return { outcome: 'below-sold', sold, total: sum(start, (state) => state.total) };
      }
      if (Date.now() >= giveUpAt) {
        await this.giveBack(voucherId, start, now);
        throw new TemporarilyUnavailable(SECKILL_MESSAGES.bucketsRefilling(), 1_000);
      }
      const takes = planTakes(now, total - target);
      if (takes.length === 0) {
        // The units left to take are pending between buckets: they arrive (or return) shortly.
        await sleep(PENDING_WAIT_MS);
        continue;
      }
      await Promise.all(
        takes.map(({ state, units }) =>
          this.scripts.controlBucket({ voucherId, bucket: state.bucket, totalIfMissing: state.total, change: { total: state.total - units } }),
        ),
      );
    }
  }

  /** A refused lower puts back what it took: each bucket's total (and stock) as it was before, its version bumped. */
  private async giveBack(voucherId: string, start: readonly Present[], now: readonly Present[]): Promise<void> {
    const lowered = start.flatMap((before) => {
      const current = now.find((state) => state.bucket.index === before.bucket.index);
      return current && current.total < before.total ? [{ before, current }] : [];
    });
    await Promise.all(
      lowered.map(({ before, current }) =>
        this.scripts.controlBucket({ voucherId, bucket: before.bucket, totalIfMissing: current.total, change: { total: before.total } }),
      ),
    );
  }

  private async moveLayoutWindow(voucherId: string, change: SaleControl): Promise<void> {
    const [begin, end] = await this.redis.hmget(this.keys.voucher(voucherId).voucher, 'begin', 'end');
    if (begin === null || end === null) return;
    await this.scripts.controlLayout({ voucherId, begin: change.begin ?? new Date(Number(begin)), end: change.end ?? new Date(Number(end)) });
  }
}

/** Takes of `units` from the buckets' stock, richest first. */
function planTakes(states: readonly Present[], units: number): Array<{ state: Present; units: number }> {
  const takes: Array<{ state: Present; units: number }> = [];
  let left = units;
  for (const state of [...states].sort((a, b) => b.stock - a.stock)) {
    if (left === 0 || state.stock <= 0) break;
    const take = Math.min(state.stock, left);
    takes.push({ state, units: take });
    left -= take;
  }
  return takes;
}

const sum = <T>(items: readonly T[], of: (item: T) => number): number => items.reduce((total, item) => total + of(item), 0);
