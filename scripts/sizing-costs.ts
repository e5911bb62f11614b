/**
 * The measured CPU per request of each tier that `npm run sizing` projects from (docs/sizing.md):
 * the one place these figures are written for it. Each figure lists its runs' values, in µs of CPU
 * of that tier's processes per request (or per accepted order), and where they were measured; the
 * projection uses the dearest run. A figure not measured yet has no runs: the projection then
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

const EDGE_READS =
  'docs/BENCHMARKS.md, "The edge\'s reads": `npm run bench -- --scenarios shop-hot,shop-redis,edge-shop-l1,edge-shop-l2`, 3 runs of 2026-11-28 21:26–21:32 UTC';
const SALE_REQUESTS = 'docs/sizing.md, "The app\'s figures": `npx tsx bench/costs/sale-requests.ts`, 3 runs of 2026-11-28';

export const COSTS = {
  edgeL1Read: {
    tier: 'edge',
    what: 'a shop read answered from L1 (nginx master and workers)',
    runs: [24.6, 33.0, 31.9],
    source: `${EDGE_READS}, scenario edge-shop-l1, nginx column`,
  },
  edgeL2Read: {
    tier: 'edge',
    what: "a shop read answered from L2, the app's Redis record (nginx)",
    runs: [48.5, 62.0, 59.2],
    source: `${EDGE_READS}, scenario edge-shop-l2, nginx column`,
  },
  edgeRefusal: {
    tier: 'edge',
    what: "a sale's refusal answered at the edge",
    runs: [],
    source: 'not measured yet',
    unknown: { symbol: 'e', toBeMeasured: "issue 41's bench scenario of a sold-out refusal at the edge (aim: ≥ 5× cheaper than the app's refusal)" },
  },
  proxyPass: {
    tier: 'edge',
    what: 'an order request passed to the app (nginx as a proxy)',
    runs: [],
    source: 'not measured yet',
    unknown: {
      symbol: 'p',
      toBeMeasured: "issue 41's bench scenario of an order through the edge against the plain proxy (aim: ≤ 1.05× the plain proxy's)",
    },
  },
  appAccepted: {
    tier: 'app',
    what: 'an order accepted, its worker writing it to MySQL (app server)',
    runs: [304.5],
    source: `${SALE_REQUESTS}, slice "accepted", server`,
  },
  appRefusal: {
    tier: 'app',
    what: 'a sold-out refusal from the sold-out memory (app server)',
    runs: [143.5],
    source: `${SALE_REQUESTS}, slice "refused", server`,
  },
  appShopRead: {
    tier: 'app',
    what: "a shop read from the app's near cache (serving CPU)",
    runs: [73.6, 109, 113],
    source: `${EDGE_READS}, scenario shop-hot`,
  },
  redisAccepted: {
    tier: 'redis',
    what: "an order accepted: session, limits, id block, reserve.lua, the worker's reads and acknowledgements",
    runs: [38.5],
    source: `${SALE_REQUESTS}, slice "accepted", Redis`,
  },
  redisRefusal: {
    tier: 'redis',
    what: 'a sold-out refusal: the session lookup alone (HGETALL + PTTL, docs/BENCHMARKS.md "After a sell-out")',
    runs: [8.0],
    source: `${SALE_REQUESTS}, slice "refused", Redis`,
  },
  redisL2Read: {
    tier: 'redis',
    what: "the edge's GET of a record for an L2 read",
    runs: [16.9, 20.1, 20.2],
    source: `${EDGE_READS}, scenario edge-shop-l2, Redis column`,
  },
  voucherMasterAccepted: {
    tier: 'voucher-master',
    what: "an order accepted, reserve.lua batched (≤ 64), on the voucher's own Redis core",
    runs: [8.8, 9.4, 12.4],
    source:
      'docs/bench-hot-voucher.md, "What one core sustains": `npm run bench -- hot-voucher`, case accepting, batched, 3 runs of 2026-11-26 08:40–08:47 UTC',
  },
  mysqlAccepted: {
    tier: 'mysql',
    what: 'an order written by group commit (MariaDB)',
    runs: [35.0],
    source: `${SALE_REQUESTS}, slice "accepted", MariaDB`,
  },
  brokerAccepted: {
    tier: 'broker',
    what: 'an order message: persistent publish to a quorum queue, confirm, delivery, ack (RabbitMQ)',
    runs: [106, 84, 85],
    source:
      'docs/flows/seckill-rabbitmq.md, "Measured": `npm run bench -- --scenarios baseline,seckill-async,seckill-rabbitmq`, scenario seckill-rabbitmq, broker column, 3 runs of 2026-11-26 05:14–05:20 UTC',
  },
} as const satisfies Record<string, CostFigure>;

export type CostName = keyof typeof COSTS;
