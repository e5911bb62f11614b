/**
 * The measured CPU per request of each tier that `npm run sizing` projects from (docs/sizing.md):
 * the one place these figures are written for it. Each figure lists its runs' values, in µs of CPU
 * of that tier's processes per request (or per accepted order), and where they were measured; the
 * projection uses their median. A figure not measured yet has no runs: the projection then
 * carries it as a named unknown the reader sets, never a guess.
 */

export type Tier = 'edge' | 'app' | 'redis' | 'voucher-master' | 'mysql' | 'broker';

export interface CostFigure {
  tier: Tier;
  /** What one unit of it is. */
  what: string;
  /** µs of CPU per request, one value per run; empty: not measured yet. */
  runs: readonly number[];
  /** Where it was measured: page and section, scenario or command, date. */
  source: string;
  /** For a figure not measured yet: the letter the projection writes for it, and what will measure it. */
  unknown?: { symbol: string; toBeMeasured: string };
}

/** Sources are Markdown, their links relative to docs/ (they are rendered into docs/sizing.md). */
const EDGE_READS =
  "[BENCHMARKS.md, the edge's reads](BENCHMARKS.md#the-edges-reads), 3 runs of 2026-11-29 04:15–04:21 UTC, saturated by wrk (load average 1.3–2.0)";
// The app's read from the earlier set: this machine ran ~1.5× slower for the later one, and the app's other figures are of 2026-11-28.
const EDGE_READS_EARLIER =
  "[benchmarks-history.md, the edge's reads](benchmarks-history.md#the-edges-reads-issue-41-runs-of-2026-11-29-02350252-utc-by-autocannon), 3 runs of 2026-11-29 02:46–02:52 UTC (load average 1.5–3.0)";
const EDGE_SALE =
  '[BENCHMARKS.md, the sale at the edge](BENCHMARKS.md#the-sale-at-the-edge), 3 runs of 2026-11-29 04:24–04:33 UTC, 10 rounds, the refusals saturated by wrk (load average 2.1–2.7)';
const EDGE_SALE_EARLIER =
  '[benchmarks-history.md, the sale at the edge](benchmarks-history.md#the-sale-at-the-edge-issue-41-runs-of-2026-11-29-01590234-utc-by-autocannon), 3 runs of 2026-11-29 02:25–02:34 UTC, 10 rounds (load average 1.2–2.4)';
const SALE_REQUESTS = "[the app's figures](#the-apps-figures) (`bench/costs/sale-requests.ts`), 3 runs of 2026-11-28 23:01–23:04 UTC";

export const COSTS = {
  edgeL1Read: {
    tier: 'edge',
    what: 'a shop read answered from L1 (nginx master and workers)',
    runs: [12.3, 16.2, 13.1],
    source: `${EDGE_READS}: edge-shop-l1, nginx`,
  },
  edgeL2Read: {
    tier: 'edge',
    what: "a shop read answered from L2, the app's Redis record, concurrent reads of it sharing one GET (nginx)",
    runs: [25.2, 36.7, 29.0],
    source: `${EDGE_READS}: edge-shop-l2, nginx`,
  },
  edgeRefusal: {
    tier: 'edge',
    what: "a sale's refusal answered at the edge (nginx master and workers)",
    runs: [15.1, 14.7, 13.0],
    source: `${EDGE_SALE}: edge-sold-out, nginx`,
  },
  proxyPass: {
    tier: 'edge',
    what: "an order request passed to the app (nginx as a plain proxy; the edge's checks add 2–4 µs)",
    runs: [22.1, 22.1, 24.6],
    source: `${EDGE_SALE_EARLIER}: proxy-order, nginx`,
  },
  appAccepted: {
    tier: 'app',
    what: 'an order accepted, its worker writing it to MySQL (app server)',
    runs: [262.0, 229.0, 233.0],
    source: `${SALE_REQUESTS}: accepted, server`,
  },
  appRefusal: {
    tier: 'app',
    what: 'a sold-out refusal from the sold-out memory (app server)',
    runs: [166.5, 153.0, 143.0],
    source: `${SALE_REQUESTS}: refused, server`,
  },
  appShopRead: {
    tier: 'app',
    what: "a shop read from the app's near cache (serving CPU)",
    runs: [58.7, 59.0, 60.9],
    source: `${EDGE_READS_EARLIER}: shop-hot`,
  },
  redisAccepted: {
    tier: 'redis',
    what: "an order accepted: session, limits, id block, reserve.lua, the worker's reads and acknowledgements",
    runs: [32.0, 28.0, 31.0],
    source: `${SALE_REQUESTS}: accepted, Redis`,
  },
  redisRefusal: {
    tier: 'redis',
    what: 'a sold-out refusal: the session lookup alone (`HGETALL` + `PTTL`)',
    runs: [9.0, 7.5, 8.0],
    source: `${SALE_REQUESTS}: refused, Redis`,
  },
  redisL2Read: {
    tier: 'redis',
    what: "the edge's GETs for an L2 read of one hot record (shared by concurrent reads)",
    runs: [0.91, 1.3, 0.86],
    source: `${EDGE_READS}: edge-shop-l2, Redis`,
  },
  voucherMasterAccepted: {
    tier: 'voucher-master',
    what: "an order accepted, reserve.lua batched (≤ 64), on the voucher's own Redis core",
    runs: [8.8, 9.4, 12.4],
    source:
      '[bench-hot-voucher.md, what one core sustains](bench-hot-voucher.md#what-one-core-sustains-b--1) (`npm run bench -- hot-voucher`): accepting, batched; 3 runs of 2026-11-26 08:40–08:47 UTC',
  },
  mysqlAccepted: {
    tier: 'mysql',
    what: 'an order written by group commit (MariaDB)',
    runs: [19.0, 16.0, 17.0],
    source: `${SALE_REQUESTS}: accepted, MariaDB`,
  },
  brokerAccepted: {
    tier: 'broker',
    what: 'an order message: a persistent publish to a quorum queue, its confirm, delivery and ack',
    runs: [106, 84, 85],
    source:
      '[flows/seckill-rabbitmq.md, measured](flows/seckill-rabbitmq.md#measured): seckill-rabbitmq, broker; 3 runs of 2026-11-26 05:14–05:20 UTC (load average 5–12)',
  },
} as const satisfies Record<string, CostFigure>;

export type CostName = keyof typeof COSTS;

/** COSTS, or another table of the same figures (a test's). */
export type CostTable = Record<CostName, CostFigure>;
