/** What every bucket run reports, after the load: drained, read back from MySQL and Redis, judged. */
import type { World } from '../../harness/index.js';
import { soldOutChecks, type Check } from '../../sale/index.js';
import { saleChecks, saleFigures, saleRow, timeDrain, type Figures, type LoadResult, type SaleSetup } from '../harness/index.js';
import { BUCKETS, type BucketBed } from './bed.js';
import type { BucketSale } from './bucket-sale.js';

/**
 * Redis's own count of the voucher: buyers marked in every bucket, units held (stock + pending, a
 * transfer already given and not yet settled counted once: its units are in the recipient's stock
 * and still in the donor's pending, as reconcile counts them), pending alone.
 */
export async function redisCount(world: World, voucherId: string): Promise<{ marked: number; held: number; pending: number }> {
  let marked = 0;
  let held = 0;
  let pending = 0;
  for (let index = 0; index < BUCKETS; index += 1) {
    const bucket = { index, of: BUCKETS };
    const snapshot = await world.sale.snapshots.bucketSnapshot(voucherId, bucket);
    marked += await world.redis.hlen(world.sale.keys.bucket(voucherId, bucket).buyers);
    const given = await world.sale.transfers.given(snapshot.transfers);
    const givenUnits = snapshot.transfers.filter((transfer) => given.has(transfer.transferId)).reduce((sum, transfer) => sum + transfer.units, 0);
    held += snapshot.stock + snapshot.pending - givenUnits;
    pending += snapshot.pending;
  }
  return { marked, held, pending };
}

/** The figures and checks of every bucket run, after the load: drained, read back from MySQL and Redis. */
export async function judge(
  bed: BucketBed,
  setup: SaleSetup & { sale: BucketSale },
  load: LoadResult,
  deadLettersBefore: number,
): Promise<{ figures: Figures; checks: Check[] }> {
  const { world } = bed;
  const voucherId = setup.vouchers[0]!;
  const drainMs = await timeDrain(world);
  const figures = await saleFigures(world, setup);
  // The dead-letter streams are the world's, shared by the bed's runs: this run's are the new ones.
  figures.deadLetters -= deadLettersBefore;
  const count = await redisCount(world, voucherId);
  const unaccounted = setup.stock - count.marked - count.held;
  const answers = setup.sale.ledger.of(voucherId);
  // Units left: what MySQL did not sell, or Redis still holds, whichever is more (none is given back in these runs).
  const left = new Map([[voucherId, Math.max(setup.stock - figures.inMysql, count.held)]]);
  const checks = saleChecks(figures, drainMs);
  checks.push(
    ...soldOutChecks(setup.sale.ledger, setup.vouchers, setup.stock, left),
    {
      name: 'MySQL = accepted',
      pass: figures.inMysql === figures.accepted + figures.acceptedUnanswered,
      detail: `${figures.inMysql} in MySQL, ${figures.accepted} answered accepted, ${figures.acceptedUnanswered} accepted whose answer was a 5xx`,
    },
    {
      name: "Redis's count: buyers + units held = stock",
      pass: unaccounted === 0,
      detail: `${count.marked} buyers marked + ${count.held} units held (${count.pending} pending) = ${count.marked + count.held} of ${setup.stock}`,
    },
  );
  return {
    figures: {
      ...saleRow(figures, load, drainMs),
      stock: setup.stock,
      answered503: setup.sale.unavailable,
      outcomeUnknown503: setup.sale.outcomeUnknown,
      refusedSoldOut: answers?.soldOut ?? 0,
      acceptedAfterSoldOut: answers?.acceptedAfterSoldOut ?? 0,
      unaccounted,
      deadLetters: figures.deadLetters,
    },
    checks,
  };
}
