/**
 * `npm run bench -- hot-voucher`'s bucketed sales (docs/bench-hot-voucher.md, issue 30): one
 * voucher sold out from B = 1, 2, 3 buckets on a Redis Cluster of 3 masters + 3 replicas started
 * here on free ports (kit/redis-cluster.ts) and stopped by pid at the end.
 *
 * For each B, with buyers spread evenly over the buckets, and once more for the largest B with
 * nine buyers in ten homing to bucket 0 (the skew refills exist for), the driver (this process, through the app's sale decider: one sale per connection, as
 * one per app instance, batched at the app's SECKILL_RESERVE_BATCH_MAX) sells a voucher of `stock`
 * units to distinct buyers until every loop has been told "sold out": demand above stock, the
 * sold-out boundary crossed under full concurrency. Measured from the first order to the one that
 * took the last unit:
 *   - each master's CPU (/proc/<pid>/stat) per accepted order of the voucher;
 *   - the projected ceiling: 1e6 / (µs per order of the busiest master), the rate at which that
 *     master's one core would be busy all the time, the first limit the sale meets (each master is
 *     one single-threaded process, one core);
 *   - refills (units moved between buckets) and bucket readings per 1,000 orders;
 *   - what the last 1 % of the stock took: requests answered, reserve.lua attempts and refills,
 *     and its time against an average 1 %.
 * Then the sale checks: units conserved, every unit sold, no false sold out, nothing pending.
 */
import calculateSlot from 'cluster-key-slot';
import { Redis } from 'ioredis';
import { closeRedis, createRedis, type RedisClient } from '../src/infra/redis.js';
import { buildSale, homeBucket, type Sale, SaleKeys } from '../src/modules/seckill/index.js';
import { startRedisCluster, type TestCluster } from '../kit/redis-cluster.js';
import { processCpuMicros } from './cpu.js';
import { SoldOutLedger, soldOutChecks, type Check } from './seckill.js';

export interface BucketedOptions {
  buckets: number[];
  stock: number;
  connections: number;
  /**
   * Orders awaiting an answer at once per bucket (B × this in all): each bucket's lane then gets
   * batches as full as B = 1's one lane, as under a load that saturates the masters.
   */
  inFlight: number;
  /** Most orders one reserve.lua run decides (the app's SECKILL_RESERVE_BATCH_MAX). */
  batchMax: number;
  /** A sale that has not sold out by then fails the run. */
  timeoutMs?: number;
}

export interface MasterCpu {
  port: number;
  /** The voucher's buckets whose keys this master serves. */
  buckets: number[];
  /** Its CPU over the sale, per accepted order of the voucher, µs. */
  microsPerOrder: number;
}

export interface BucketedRow {
  buckets: number;
  /** Buyers spread evenly over the buckets (their ids in sequence), or nine in ten homing to bucket 0. */
  buyers: 'even' | 'skewed';
  stock: number;
  accepted: number;
  /** From the first order to the last unit: the driver's pace on this shared machine, not Redis'. */
  seconds: number;
  ordersPerSecond: number;
  masters: MasterCpu[];
  /** The three replicas' CPU together, per order, µs (on other hosts in a deployment: not in the ceiling). */
  replicasMicrosPerOrder: number;
  /** 1e6 / the busiest master's µs per order: accepted orders/s of the voucher when that master's core is full. */
  projectedCeiling: number;
  /** projectedCeiling / B = 1's in the same run. */
  ceilingVsOneBucket: number;
  /** reserve.lua attempts (each order's, a refill's retries included) per accepted order. */
  reservesPerOrder: number;
  /** Orders one reserve.lua run decided, on average (the batches as they went out). */
  ordersPerScriptRun: number;
  /** Transfers (take + give + settle: three script runs each) per 1,000 accepted orders. */
  refillsPer1000: number;
  /** Refill rounds (each a reading of every bucket, B HMGETs; one per empty bucket and store at a time) per 1,000 accepted orders. */
  bucketReadingsPer1000: number;
  /** 503 "retry" answers (units still moving after the store's patience), retried by the driver. */
  retries: number;
  lastPercent: LastPercent;
  checks: Check[];
  pass: boolean;
}

/** What the last ⌈stock / 100⌉ units took, from the answer that left that many to the one that took the last. */
export interface LastPercent {
  units: number;
  requests: number;
  reserves: number;
  refills: number;
  ms: number;
  /** The whole sale's time / 100: an average 1 %. */
  averageMs: number;
}

const VOUCHER = '4242';
const WARM_UP_VOUCHER = '4241';

export async function measureBucketed(options: BucketedOptions): Promise<BucketedRow[]> {
  const cluster = await startRedisCluster({ masters: 3, replicas: 1 });
  const masters = cluster.nodes.slice(0, 3).map((node) => Number(node.split(':')[1]));
  const nodeClients = masters.map((port) => new Redis({ port, host: '127.0.0.1' }));
  const clients = Array.from({ length: options.connections }, () => createRedis({ redisUrl: '', redisClusterNodes: cluster.nodes, redisKeyPrefix: '' }));
  try {
    const rows: BucketedRow[] = [];
    const most = Math.max(...options.buckets);
    const sales = [
      ...options.buckets.map((buckets) => ({ buckets, buyers: 'even' as const })),
      ...(most > 1 ? [{ buckets: most, buyers: 'skewed' as const }] : []),
    ];
    for (const sale of sales) {
      await Promise.all(nodeClients.map((client) => client.flushall()));
      rows.push(await oneBucketedSale(sale, { cluster, masters, clients, nodeClients }, options));
    }
    const base = rows.find((row) => row.buckets === 1 && row.buyers === 'even')?.projectedCeiling ?? Number.NaN;
    for (const row of rows) row.ceilingVsOneBucket = round2(row.projectedCeiling / base);
    return rows;
  } finally {
    await Promise.all(clients.map((client) => closeRedis(client)));
    nodeClients.forEach((client) => client.disconnect());
    await cluster.stop();
  }
}

interface ClusterParts {
  cluster: TestCluster;
  masters: number[];
  clients: RedisClient[];
  nodeClients: Redis[];
}

async function oneBucketedSale(
  layout: { buckets: number; buyers: BucketedRow['buyers'] },
  parts: ClusterParts,
  options: BucketedOptions,
): Promise<BucketedRow> {
  const { buckets, buyers } = layout;
  const keys = new SaleKeys(4, true);
  const counts = { batches: 0, batchOrders: 0 };
  const onBatch = (size: number) => {
    counts.batches += 1;
    counts.batchOrders += size;
  };
  const stores = parts.clients.map((client) => buildSale(client, keys, { maxBatch: options.batchMax, onBatch }));
  const traces = stores.map(traceStore);
  const publish = async (voucherId: string, stock: number) => {
    const begin = new Date(Date.now() - 60_000);
    await stores[0]!.publisher.publish({ voucherId, stock, begin, end: new Date(begin.getTime() + 6 * 3600_000), buckets });
    for (const store of stores) await store.layouts.bucketsOf(voucherId);
  };
  // Warm-up (scripts loaded on every master, the driver's JIT), then a clean slate for the measured sale.
  const warmUpStock = Math.max(500, Math.ceil(options.stock / 50));
  await publish(WARM_UP_VOUCHER, warmUpStock);
  await sellOut(stores, { voucherId: WARM_UP_VOUCHER, stock: warmUpStock, buckets, buyers }, options, 1_000_000_000);
  await Promise.all(parts.nodeClients.map((client) => client.flushall()));
  for (const trace of traces) trace.clear();
  Object.assign(counts, { batches: 0, batchOrders: 0 });

  await publish(VOUCHER, options.stock);
  const pids = parts.cluster.nodes.map((node) => parts.cluster.process(Number(node.split(':')[1])).pid!);
  const sale = await sellOut(stores, { voucherId: VOUCHER, stock: options.stock, buckets, buyers }, options, 2_000_000_000, pids);
  const accepted = sale.acceptedAt.length;
  const perOrder = (micros: number) => round2(micros / accepted);
  const cpu = pids.map((pid, index) => sale.cpuAtLastUnit[index]! - sale.cpuAtStart[index]!);
  const mastersOf = await bucketMasters(parts.cluster, keys, buckets);
  const masters = parts.masters.map((port, index) => ({
    port,
    buckets: mastersOf.flatMap((master, bucket) => (master === port ? [bucket] : [])),
    microsPerOrder: perOrder(cpu[index]!),
  }));
  const busiest = Math.max(...masters.map((master) => master.microsPerOrder));
  const seconds = (sale.lastUnitAt - sale.startedAt) / 1000;
  const all = traces.flatMap((trace) => trace.reserveCalls);
  const moves = traces.flatMap((trace) => trace.moves);
  const checks = await bucketedChecks(parts.clients[0]!, keys, buckets, options.stock, sale);
  return {
    buckets,
    buyers,
    stock: options.stock,
    accepted,
    seconds: round2(seconds),
    ordersPerSecond: Math.round(accepted / seconds),
    masters,
    replicasMicrosPerOrder: perOrder(cpu.slice(parts.masters.length).reduce((sum, micros) => sum + micros, 0)),
    projectedCeiling: Math.round(1e6 / busiest),
    ceilingVsOneBucket: Number.NaN,
    reservesPerOrder: round2(all.length / accepted),
    ordersPerScriptRun: round2(counts.batchOrders / counts.batches),
    refillsPer1000: round2((moves.length * 1000) / accepted),
    bucketReadingsPer1000: round2((traces.reduce((sum, trace) => sum + trace.rounds(), 0) * 1000) / accepted),
    retries: sale.retries,
    lastPercent: lastPercent(sale, all, moves),
    checks,
    pass: checks.every((check) => check.pass),
  };
}

/** The master serving each bucket's keys (bucket b at index b). */
async function bucketMasters(cluster: TestCluster, keys: SaleKeys, buckets: number): Promise<number[]> {
  const keyOf = (index: number) => (buckets > 1 ? keys.bucket(VOUCHER, { index, of: buckets }).voucher : keys.voucher(VOUCHER).voucher);
  return Promise.all(Array.from({ length: buckets }, async (_, index) => (await cluster.shardOf(calculateSlot(keyOf(index)))).master));
}

interface SaleTrace {
  reserveCalls: number[];
  moves: number[];
  rounds(): number;
  clear(): void;
}

/**
 * Counts, with their times, the store's reserve.lua attempts and the refills that moved units,
 * and its refill rounds, by wrapping the sale's own parts (the router calls `batches.reserve`
 * and `transfers.refill`, which calls `this.move`): the bench counts what the app does
 * without a hook in the app for it.
 */
function traceStore(store: Sale): SaleTrace {
  const trace = { reserveCalls: [] as number[], moves: [] as number[], rounds: 0 };
  const reserve = store.batches.reserve.bind(store.batches);
  store.batches.reserve = (...args) => {
    trace.reserveCalls.push(performance.now());
    return reserve(...args);
  };
  const refill = store.transfers.refill.bind(store.transfers);
  const seen = new WeakSet<Promise<unknown>>();
  store.transfers.refill = (...args) => {
    // The orders waiting on one bucket share its refill: a round is a promise not seen before.
    const running = refill(...args);
    if (!seen.has(running)) {
      seen.add(running);
      trace.rounds += 1;
    }
    return running;
  };
  const move = store.transfers.move.bind(store.transfers);
  store.transfers.move = async (...args) => {
    const units = await move(...args);
    if (units > 0) trace.moves.push(performance.now());
    return units;
  };
  return {
    reserveCalls: trace.reserveCalls,
    moves: trace.moves,
    rounds: () => trace.rounds,
    clear: () => {
      trace.reserveCalls.length = 0;
      trace.moves.length = 0;
      trace.rounds = 0;
    },
  };
}

interface SaleRun {
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
async function sellOut(
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
          if ((error as { statusCode?: number }).statusCode === 503) return 'retry' as const;
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

function lastPercent(sale: SaleRun, reserveCalls: number[], moves: number[]): LastPercent {
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

/**
 * The sale's promises, read back from Redis: units conserved (accepted + left = stock, none
 * oversold), every unit sold and no false sold out (seckill.ts soldOutChecks; nothing is given
 * back here), every accepted order queued for the worker and each buyer recorded once, nothing
 * pending between buckets and no transfer left open.
 */
async function bucketedChecks(redis: RedisClient, keys: SaleKeys, buckets: number, stock: number, sale: SaleRun): Promise<Check[]> {
  const refs = buckets > 1 ? Array.from({ length: buckets }, (_, index) => ({ index, of: buckets })) : [undefined];
  const sales = refs.map((bucket) => keys.saleOf(VOUCHER, bucket));
  const fields = await Promise.all(sales.map((sale) => redis.hmget(sale.voucher, 'stock', 'pending')));
  const left = fields.reduce((sum, [units, pending]) => sum + Number(units ?? Number.NaN) + Number(pending ?? 0), 0);
  const pending = fields.reduce((sum, [, units]) => sum + Number(units ?? 0), 0);
  const queued = (await Promise.all([...new Set(sales.map((sale) => sale.queued))].map((key) => redis.hlen(key)))).reduce((a, b) => a + b, 0);
  const buyers = (await Promise.all(sales.map((sale) => redis.hlen(sale.buyers)))).reduce((a, b) => a + b, 0);
  const transfers = (await Promise.all(keys.laneShards().map((lane) => redis.hlen(keys.transfers(lane))))).reduce((a, b) => a + b, 0);
  const accepted = sale.acceptedAt.length;
  return [
    {
      name: 'units conserved, none oversold',
      pass: accepted <= stock && accepted + left === stock,
      detail: `${accepted} accepted + ${left} left = ${accepted + left} of ${stock}`,
    },
    ...soldOutChecks(sale.ledger, [VOUCHER], stock, new Map([[VOUCHER, left]])),
    {
      name: 'every accepted order queued, each buyer once',
      pass: queued === accepted && buyers === accepted,
      detail: `${queued} queued orders and ${buyers} buyers for ${accepted} accepted`,
    },
    { name: 'nothing pending', pass: pending === 0 && transfers === 0, detail: `${pending} units pending between buckets, ${transfers} transfers open` },
  ];
}

const round2 = (value: number) => Math.round(value * 100) / 100;

/** The bucketed sales as Markdown: one row per B, then each master's CPU per order and the checks. */
export function renderBucketed(rows: BucketedRow[]): string {
  const n = (value: number) => value.toLocaleString('en-US');
  const ports = rows[0]?.masters.map((master) => master.port) ?? [];
  const last = (row: BucketedRow) => {
    const p = row.lastPercent;
    return `${n(p.requests)} req, ${n(p.reserves)} reserve runs, ${p.refills} refills, ${n(p.ms)} ms (avg 1 %: ${n(p.averageMs)} ms)`;
  };
  return [
    '| B | stock | accepted/s (driver) | ' +
      ports.map((_, index) => `master ${index + 1} µs/order`).join(' | ') +
      ' | replicas µs/order | projected ceiling, orders/s | vs B = 1 | orders per reserve run | reserve runs per order | refills per 1,000 | bucket readings per 1,000 | 503 retried | last 1 % of stock |',
    '|---:|---:|---:|' + ports.map(() => '---:').join('|') + '|---:|---:|---:|---:|---:|---:|---:|---:|---|',
    ...rows.map(
      (row) =>
        `| ${row.buckets}${row.buyers === 'skewed' ? ', 9 in 10 buyers to b0' : ''} | ${n(row.stock)} | ${n(row.ordersPerSecond)} | ` +
        row.masters.map((master) => `${master.microsPerOrder}${master.buckets.length > 0 ? ` (b${master.buckets.join(',')})` : ''}`).join(' | ') +
        ` | ${row.replicasMicrosPerOrder} | ${n(row.projectedCeiling)} | ${row.ceilingVsOneBucket}× | ${row.ordersPerScriptRun} | ${row.reservesPerOrder} | ${row.refillsPer1000} | ${row.bucketReadingsPer1000} | ${row.retries} | ${last(row)} |`,
    ),
    '',
    'Projected ceiling = 1e6 / (µs of CPU per accepted order on the busiest master): the rate at which that master, one',
    "single-threaded process on one core, would be busy all the time; the other masters are then below a full core. Each master's",
    'µs per order is its /proc CPU from the first order to the last unit taken, divided by the orders accepted.',
    '',
    ...rows.map(
      (row) =>
        `- B = ${row.buckets}${row.buyers === 'skewed' ? ', skewed' : ''}: ${row.checks.map((check) => `${check.pass ? 'PASS' : 'FAIL'} ${check.name} (${check.detail})`).join('; ')}`,
    ),
  ].join('\n');
}
