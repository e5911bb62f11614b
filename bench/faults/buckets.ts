/**
 * Issue 30's promises under faults: one voucher sold from B = 3 buckets on the three masters of a
 * Redis Cluster (bucket-bed.ts: 3 masters + 3 replicas, three app instances with
 * SECKILL_REPLICA_ACKS=1), demand above stock, nine buyers in ten homing to bucket 0, so that the
 * other buckets' units reach them by refills (take, give, settle) all through the sale.
 *
 * - `refill abandoned between take and give`: before the load, every unit of buckets 1 and 2 is
 *   taken towards bucket 0 and never given (BucketTransfers.takeAndAbandon: the state an
 *   instance SIGKILLed between the two steps leaves, made on purpose rather than by a lucky kill).
 *   A first load sells bucket 0's units and then meets nothing but pending units: it must get 503
 *   (retry), never "sold out". The instances' own sweep (records older than 10 s, every 5 s)
 *   returns the units to their buckets; a second load sells them to the last.
 * - `SECKILL_REPLICA_ACKS=1, hot bucket's master killed`: SIGKILL the master of bucket 0 (the one
 *   receiving every give) at a quarter of the load; its replica is promoted.
 * - `…, replica 1.5 s stale`: as redis-failover.ts's stale replica, on that master: the promoted
 *   replica lacks 1.5 s of the bucket's writes (orders, gives). Shows what the refill steps lose
 *   when only the reserve waits for a replica; MySQL's checks still hold, Redis's count may not.
 *
 * Every run checks the sale's promises: every unit sold and no false "sold out" (soldOutChecks of
 * bench/seckill.ts: no order accepted whose first attempt was sent after a "sold out" had
 * arrived, no unit left once the voucher said "sold out"), none oversold, none twice to a user, MySQL = the accepted orders, and Redis's own count:
 * the buyers it marks plus the units it still holds (stock + pending) = stock.
 */
import calculateSlot from 'cluster-key-slot';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { REFUSALS } from '../../src/modules/seckill/index.js';
import type { RequestTiming } from '../load.js';
import type { Check } from '../seckill.js';
import type { World } from '../world.js';
import { BUCKETS, bucketBed, createBucketedVoucher, stopBucketBed, type BucketBed } from './bucket-bed.js';
import {
  driveSale,
  saleChecks,
  saleFigures,
  saleRow,
  sumMetric,
  timeDrain,
  TimedSale,
  type FaultRun,
  type FaultScenario,
  type Figures,
  type LoadResult,
  type SaleSetup,
  type Size,
} from './harness.js';
import { soldOutChecks, streamBacklog } from '../seckill.js';

const ABANDONED = 'refill abandoned between take and give';
const PLAIN_KILL = "SECKILL_REPLICA_ACKS=1, hot bucket's master killed";
const STALE_KILL = "SECKILL_REPLICA_ACKS=1, hot bucket's master killed, replica 1.5 s stale";
const STALE_MS = 1_500;
/**
 * What a replica promoted 1.5 s stale breaks whatever the refills do (redis-failover.ts drops the
 * same): orders it accepted after WAIT timeouts and the worker wrote are gone from Redis, which sells
 * their units again; MySQL refuses those (dead letters: answered accepted, not in MySQL), and each
 * dead letter gives its unit back, so a later order may follow a "sold out". The rollback is
 * consistent within the bucket, though: Redis's count (buyers + units held = stock) still holds
 * unless a refill step was lost, and that is what the variant judges.
 */
const BROKEN_BY_A_STALE_REPLICA = new Set(['no accepted order lost', 'no dead letters', 'every unit sold', 'no false sold out', 'MySQL = accepted']);
/** The bucket nine buyers in ten home to: every refill gives to it. */
const HOT = { index: 0, of: BUCKETS };

export const bucketFaults: FaultScenario = {
  name: 'buckets',
  variants: [ABANDONED, PLAIN_KILL, STALE_KILL],
  run: async (variant, size) => {
    const bed = await bucketBed(size);
    return variant === ABANDONED ? abandonedRefills(bed, size) : hotMasterKilled(bed, size, variant === STALE_KILL);
  },
  close: stopBucketBed,
};

/**
 * The sale's answers, told to its SoldOutLedger (bench/seckill.ts) with each accepted order dated
 * by its Idempotency-Key's first attempt: a retry answered with the order (replayed) may carry a
 * unit decided back then, before a "sold out" that came in between. Also counts the 503s, those
 * saying the outcome is unknown apart (the request deadline answered while the order was still
 * being decided).
 */
class BucketSale extends TimedSale {
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

/**
 * Redis's own count of the voucher: buyers marked in every bucket, units held (stock + pending, a
 * transfer already given and not yet settled counted once: its units are in the recipient's stock
 * and still in the donor's pending, as reconcile counts them), pending alone.
 */
async function redisCount(world: World, voucherId: string): Promise<{ marked: number; held: number; pending: number }> {
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
async function judge(
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

function newSale(bed: BucketBed, voucherId: string, stock: number, rate: number, durationSeconds: number): SaleSetup & { sale: BucketSale } {
  return { vouchers: [voucherId], stock, sale: new BucketSale([voucherId], bed.buyers), rate, durationSeconds };
}

/**
 * Every unit of buckets 1 and 2 taken towards bucket 0 and abandoned; a load that sells bucket 0
 * and then waits on pending units (503, never "sold out"); the instances' sweep returns them; a
 * second load sells them.
 */
async function abandonedRefills(bed: BucketBed, size: Size): Promise<FaultRun> {
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

/**
 * SIGKILL of the master serving bucket 0 at a quarter of the load, once it holds a give (after STALE_MS of a stopped,
 * cut-off replica in the stale variant), with the markers of the gives it holds read just before:
 * a give the promoted replica lacks is "rolled back"; its units are lost when its donor settled
 * it anyway (the marker then stays absent), safe when the sweep returned them (marker `returned`).
 */
async function hotMasterKilled(bed: BucketBed, size: Size, stale: boolean): Promise<FaultRun> {
  const { world, instances, cluster } = bed;
  const stock = size === 'test' ? 360 : 900;
  const rate = size === 'test' ? 150 : 200;
  const durationSeconds = size === 'test' ? 6 : 12;
  const deadLettersBefore = (await streamBacklog(world)).dead;
  const ackTimeoutsBefore = await sumMetric(instances, 'seckill_replica_ack_timeouts_total');
  const voucherId = await createBucketedVoucher(world, stock);
  const setup = newSale(bed, voucherId, stock, rate, durationSeconds);
  const hotKey = world.sale.keys.bucket(voucherId, HOT).voucher;
  const slot = calculateSlot(hotKey);
  const { master, replicas } = await cluster.shardOf(slot);
  const replica = replicas[0]!;
  const prefix = world.env.REDIS_KEY_PREFIX ?? '';

  let failoverMs = null as number | null;
  let replicaStoppedMs = 0;
  let givesAtKill: string[] = [];
  let givesRolledBack: string[] = [];
  const load = await driveSale(instances, setup, [
    {
      atSeconds: durationSeconds * 0.25,
      run: async () => {
        // Killed once the master holds a give of this sale: a refill has reached the hot bucket (on a slow machine the first may come late).
        await until(async () => (await onNode(master, (node) => givenMarkers(node, prefix))).length > 0, 10_000);
        if (stale) {
          const stoppedAt = performance.now();
          cluster.process(replica).kill('SIGSTOP');
          await onNode(master, (node) => node.call('CLIENT', 'KILL', 'TYPE', 'replica'));
          await sleep(STALE_MS);
          replicaStoppedMs = Math.round(performance.now() - stoppedAt);
        }
        givesAtKill = await onNode(master, (node) => givenMarkers(node, prefix));
        cluster.process(master).kill('SIGKILL');
        if (stale) cluster.process(replica).kill('SIGCONT');
        const killedAt = performance.now();
        if (!(await until(async () => (await cluster.shardOf(slot)).master !== master, 30_000))) return;
        await cluster.waitUntilHealthy(30_000);
        failoverMs = Math.round(performance.now() - killedAt);
        const promoted = (await cluster.shardOf(slot)).master;
        const kept = new Set(await onNode(promoted, (node) => givenMarkers(node, prefix)));
        givesRolledBack = givesAtKill.filter((key) => !kept.has(key));
      },
    },
  ]);
  const judged = await judge(bed, setup, load, deadLettersBefore);
  const { figures } = judged;
  const checks = stale ? judged.checks.filter((check) => !BROKEN_BY_A_STALE_REPLICA.has(check.name)) : judged.checks;
  // Once drained: a rolled-back give whose transfer the sweep ended is `returned`; one its refill settled has no marker (its units are gone).
  const outcomes = await Promise.all(givesRolledBack.map((key) => world.redis.get(key.slice(prefix.length))));
  const givesLost = outcomes.filter((outcome) => outcome === null).length;
  const ackTimeouts = (await sumMetric(instances, 'seckill_replica_ack_timeouts_total')) - ackTimeoutsBefore;
  checks.push(
    { name: 'failover completed', pass: failoverMs !== null, detail: failoverMs === null ? 'no failover seen' : `cluster ok ${failoverMs} ms after the kill` },
    {
      name: 'no give lost',
      pass: givesLost === 0,
      detail: `${givesRolledBack.length} of ${givesAtKill.length} gives rolled back by the failover, ${givesLost} of them settled (units gone)`,
    },
    {
      name: "lost ≤ orders answered without a replica's ack",
      pass: Number(figures.lost) <= ackTimeouts,
      detail: `${Number(figures.lost)} lost, ${ackTimeouts} WAIT timeouts`,
    },
  );
  return {
    scenario: 'buckets',
    variant: stale ? STALE_KILL : PLAIN_KILL,
    figures: {
      ...figures,
      replicaStoppedMs,
      failoverMs: failoverMs ?? 'timeout',
      ackTimeouts,
      givesAtKill: givesAtKill.length,
      givesRolledBack: givesRolledBack.length,
      givesLost,
    },
    checks,
  };
}

/** Keys of the transfer markers set to `given` on one node (SCAN of its own keys). */
async function givenMarkers(node: Redis, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await node.scan(cursor, 'MATCH', `${prefix}*:transfer-in:*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  const values = keys.length === 0 ? [] : await node.mget(...keys);
  return keys.filter((_, index) => values[index] === 'given');
}

async function onNode<T>(port: number, work: (node: Redis) => Promise<T>): Promise<T> {
  const node = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
  node.on('error', () => undefined);
  try {
    return await work(node);
  } finally {
    node.disconnect();
  }
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

/** True once `check` holds, false after `timeoutMs`. */
async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) return false;
    await sleep(100);
  }
  return true;
}
