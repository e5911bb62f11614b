/**
 * `refill abandoned between take and give`: before the load, every unit of buckets 1 and 2 is
 * taken towards bucket 0 and never given, the state an instance SIGKILLed between the two steps
 * leaves; the instances' own sweep must return them (scenario.ts).
 */
import { streamBacklog } from '../../sale/index.js';
import { driveSale, type FaultRun, type LoadResult, type Size } from '../harness/index.js';
import { BUCKETS, createBucketedVoucher, HOT, type BucketBed } from './bed.js';
import { newSale } from './bucket-sale.js';
import { judge, redisCount } from './judge.js';
import { until } from './until.js';

export const ABANDONED = 'refill abandoned between take and give';

/**
 * Every unit of buckets 1 and 2 taken towards bucket 0 and abandoned; a load that sells bucket 0
 * and then waits on pending units (503, never "sold out"); the instances' sweep returns them; a
 * second load sells them.
 */
export async function abandonedRefills(bed: BucketBed, size: Size): Promise<FaultRun> {
  const { world, instances } = bed;
  const stock = size === 'test' ? 240 : 480;
  const rate = size === 'test' ? 100 : 150;
  const phaseSeconds = size === 'test' ? 2 : 4;
  const deadLettersBefore = (await streamBacklog(world)).dead;
  const voucherId = await createBucketedVoucher(world, stock);
  let stranded = 0;
  let transfers = 0;
  for (const donor of [1, 2]) {
    for (;;) {
      const units = await world.sale.transfers.takeAndAbandon(voucherId, { index: donor, of: BUCKETS }, HOT);
      if (units === 0) break;
      stranded += units;
      transfers += 1;
    }
  }
  const strandedAt = performance.now();
  const setup = newSale(bed, voucherId, stock, rate, phaseSeconds);
  const pendingLoad = await driveSale(instances, setup);
  const soldOutWhilePending = setup.sale.ledger.of(voucherId)?.soldOut ?? 0;
  const answered503WhilePending = setup.sale.unavailable;
  const acceptedWhilePending = setup.sale.accepted.size;
  // Nothing here sweeps: the units come back by the instances' own sweep, or not at all.
  const returned = await until(async () => (await redisCount(world, voucherId)).pending === 0, 60_000);
  const sweptMs = returned ? Math.round(performance.now() - strandedAt) : null;
  const lateLoad = await driveSale(instances, setup);
  const load = combined(pendingLoad, lateLoad);
  const { figures, checks } = await judge(bed, setup, load, deadLettersBefore);
  checks.push(
    {
      name: 'the sweep returned the abandoned units',
      pass: sweptMs !== null,
      detail: sweptMs === null ? 'still pending after 60 s' : `${sweptMs} ms after the takes`,
    },
    {
      name: 'no "sold out" while units were pending',
      pass: soldOutWhilePending === 0,
      detail: `${soldOutWhilePending} "sold out", ${answered503WhilePending} answers 503 during the first load`,
    },
  );
  return {
    scenario: 'buckets',
    variant: ABANDONED,
    figures: {
      ...figures,
      strandedUnits: stranded,
      strandedTransfers: transfers,
      acceptedWhilePending,
      answered503WhilePending,
      soldOutWhilePending,
      sweptMs: sweptMs ?? 'timeout',
    },
    checks,
  };
}

/** Two loads of one sale as one, for the figures every run reports. */
function combined(first: LoadResult, second: LoadResult): LoadResult {
  return {
    phases: [...first.phases, ...second.phases],
    unanswered: first.unanswered + second.unanswered,
    non2xx: first.non2xx + second.non2xx,
    startedAt: first.startedAt,
    endedAt: second.endedAt,
  };
}
