/**
 * `npm run sizing -- --units 1000000 --buyers 10000000 --seconds 60 [--edge on|off]`: the cores a
 * flash sale needs at each tier, projected from the CPU per request measured on this product
 * (scripts/sizing-costs.ts, each figure with its source). `--write` rewrites the worked examples
 * of docs/sizing.md (between the sizing markers); `--check` exits 1 when they are stale, as
 * test/unit/sizing-doc.test.ts does. `--help` lists the options.
 *
 * cores = requests per second at the tier × CPU µs per request ÷ 1e6 × headroom
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { COSTS, type CostName, type CostTable, type Tier } from './sizing-costs.js';

export const SIZING_DOC = fileURLToPath(new URL('../docs/sizing.md', import.meta.url));
export const BEGIN = '<!-- sizing:start (written by npm run sizing -- --write from scripts/sizing-costs.ts) -->';
export const END = '<!-- sizing:end -->';

export interface Sale {
  units: number;
  buyers: number;
  /** The sale's requests arrive over this many seconds (an average: bursts are the headroom's part). */
  seconds: number;
  /** The edge answers reads and the sale's known refusals; off: every request reaches the app. */
  edge: boolean;
  /** Page loads (`GET /api/shop/{id}`) per buyer before the start, besides the one at the start. */
  refreshes: number;
  /** Order requests a refused buyer sends again; each is refused too (a sold-out sale stays sold out). */
  retries: number;
  /** Share of the edge's reads that miss L1 and read L2. */
  l1Miss: number;
  /** Cores per core of measured CPU: 2 = run each core at most half busy. */
  headroom: number;
  /** `rabbitmq`: orders written through the broker (SECKILL_QUEUE), which adds its tier. */
  queue: 'stream' | 'rabbitmq';
}

export const DEFAULTS: Sale = {
  units: 1_000_000,
  buyers: 10_000_000,
  seconds: 60,
  edge: true,
  refreshes: 1,
  retries: 1,
  l1Miss: 0,
  headroom: 2,
  queue: 'stream',
};

/** The sale's requests, in all. */
export interface Traffic {
  accepted: number;
  refusals: number;
  reads: number;
}

export function saleTraffic(sale: Sale): Traffic {
  const accepted = Math.min(sale.units, sale.buyers);
  const refusedBuyers = sale.buyers - accepted;
  const orderRequests = sale.buyers + refusedBuyers * sale.retries;
  return { accepted, refusals: orderRequests - accepted, reads: sale.buyers * (1 + sale.refreshes) };
}

/** One kind of request at one tier: how many a second, at which measured cost. */
export interface Load {
  tier: Tier;
  requests: string;
  perSecond: number;
  cost: CostName;
}

export function saleLoads(sale: Sale): Load[] {
  const total = saleTraffic(sale);
  const rate = (count: number) => count / sale.seconds;
  const { accepted, refusals, reads } = { accepted: rate(total.accepted), refusals: rate(total.refusals), reads: rate(total.reads) };
  const behindTheApp: Load[] = [
    { tier: 'voucher-master', requests: 'orders accepted', perSecond: accepted, cost: 'voucherMasterAccepted' },
    { tier: 'mysql', requests: 'orders written', perSecond: accepted, cost: 'mysqlAccepted' },
    ...(sale.queue === 'rabbitmq' ? [{ tier: 'broker' as const, requests: 'order messages', perSecond: accepted, cost: 'brokerAccepted' as const }] : []),
  ];
  const loads: Load[] = sale.edge
    ? edgeLoads(accepted, refusals, reads, sale.l1Miss)
    : [
        { tier: 'edge', requests: 'every request, passed to the app', perSecond: accepted + refusals + reads, cost: 'proxyPass' },
        { tier: 'app', requests: 'orders accepted', perSecond: accepted, cost: 'appAccepted' },
        { tier: 'app', requests: 'refusals', perSecond: refusals, cost: 'appRefusal' },
        { tier: 'app', requests: 'shop reads (near cache)', perSecond: reads, cost: 'appShopRead' },
        { tier: 'redis', requests: 'orders accepted', perSecond: accepted, cost: 'redisAccepted' },
        { tier: 'redis', requests: 'refusals (session lookup)', perSecond: refusals, cost: 'redisRefusal' },
      ];
  return [...loads, ...behindTheApp].filter((load) => load.perSecond > 0);
}

/** In front of the app: the edge answers the reads and the known refusals and passes the orders. */
function edgeLoads(accepted: number, refusals: number, reads: number, l1Miss: number): Load[] {
  const l2Reads = reads * l1Miss;
  return [
    { tier: 'edge', requests: 'shop reads at L1', perSecond: reads - l2Reads, cost: 'edgeL1Read' },
    { tier: 'edge', requests: 'shop reads at L2', perSecond: l2Reads, cost: 'edgeL2Read' },
    { tier: 'edge', requests: 'refusals at the edge', perSecond: refusals, cost: 'edgeRefusal' },
    { tier: 'edge', requests: 'orders passed to the app', perSecond: accepted, cost: 'proxyPass' },
    { tier: 'app', requests: 'orders accepted', perSecond: accepted, cost: 'appAccepted' },
    { tier: 'redis', requests: 'orders accepted', perSecond: accepted, cost: 'redisAccepted' },
    { tier: 'redis', requests: "the edge's L2 reads", perSecond: l2Reads, cost: 'redisL2Read' },
  ];
}

/** Cores as a known part plus, per figure not measured yet, cores per µs of it. */
export interface Cores {
  known: number;
  perMicrosecondOf: Record<string, number>;
}

export function median(values: readonly number[]): number | undefined {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return undefined;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** The figure the projection uses: the median of the runs; undefined when not measured yet. */
export function planningMicros(name: CostName, costs: CostTable = COSTS): number | undefined {
  return median(costs[name].runs);
}

export function coresOf(load: Load, headroom: number, costs: CostTable = COSTS): Cores {
  const micros = planningMicros(load.cost, costs);
  const coresPerMicro = (load.perSecond / 1e6) * headroom;
  if (micros !== undefined) return { known: coresPerMicro * micros, perMicrosecondOf: {} };
  return { known: 0, perMicrosecondOf: { [symbolOf(load.cost, costs)]: coresPerMicro } };
}

function symbolOf(name: CostName, costs: CostTable): string {
  const symbol = costs[name].unknown?.symbol;
  if (symbol === undefined) throw new Error(`${name} has no runs and no letter to carry it by`);
  return symbol;
}

export function sumCores(parts: readonly Cores[]): Cores {
  const sum: Cores = { known: 0, perMicrosecondOf: {} };
  for (const part of parts) {
    sum.known += part.known;
    for (const [symbol, cores] of Object.entries(part.perMicrosecondOf)) sum.perMicrosecondOf[symbol] = (sum.perMicrosecondOf[symbol] ?? 0) + cores;
  }
  return sum;
}

const TIER_NAMES: Record<Tier, string> = {
  edge: 'edge (nginx + Lua)',
  app: 'app (Node)',
  redis: 'Redis, all masters',
  'voucher-master': "the voucher's Redis core",
  mysql: 'MySQL writer',
  broker: 'broker (RabbitMQ)',
};

/** Without the edge, its tier is a plain nginx proxy in front of the instances. */
const tierName = (tier: Tier, sale: Sale): string => (tier === 'edge' && !sale.edge ? 'plain proxy (nginx)' : TIER_NAMES[tier]);

const grouped = (value: number): string => Math.round(value).toLocaleString('en-US');
const decimals = (value: number, digits: number): string => value.toFixed(digits);
/** µs: three significant digits, at most one decimal from 10 µs up (as the bench reports them). */
const micro = (value: number): string => {
  const short = Number(value.toPrecision(3));
  return value >= 10 || Number.isInteger(short) ? decimals(value, 1) : String(short);
};
/** Cores: one decimal from 1 up, two significant digits below (a small tier still shows its size). */
const coreCount = (value: number): string => (value >= 1 || value === 0 ? decimals(value, 1) : String(Number(value.toPrecision(2))));

export function formatCores(cores: Cores): string {
  const terms = Object.entries(cores.perMicrosecondOf).map(([symbol, perMicro]) => `${coreCount(perMicro)}·${symbol}`);
  if (terms.length === 0) return coreCount(cores.known);
  return cores.known === 0 ? terms.join(' + ') : [coreCount(cores.known), ...terms].join(' + ');
}

/** The projection as Markdown: the traffic, then one row per load and a total per tier. */
export function renderProjection(sale: Sale, costs: CostTable = COSTS): string {
  const traffic = saleTraffic(sale);
  const loads = saleLoads(sale);
  const lines = [
    `${grouped(sale.units)} units, ${grouped(sale.buyers)} buyers over ${sale.seconds} s, edge ${sale.edge ? 'on' : 'off'}, queue ${sale.queue}: ` +
      `${grouped(traffic.accepted)} orders accepted, ${grouped(traffic.refusals)} refusals (${sale.retries} ${sale.retries === 1 ? 'retry' : 'retries'} per refused buyer), ` +
      `${grouped(traffic.reads)} shop reads (${sale.refreshes} ${sale.refreshes === 1 ? 'refresh' : 'refreshes'} per buyer); headroom ×${sale.headroom}` +
      (sale.edge ? `, ${sale.l1Miss * 100} % of the edge's reads at L2.` : '.'),
    '',
    '| tier | requests | per second | CPU µs each | cores |',
    '|---|---|---:|---:|---:|',
  ];
  const tiers = [...new Set(loads.map((load) => load.tier))];
  for (const tier of tiers) {
    const mine = loads.filter((load) => load.tier === tier);
    const cores = mine.map((load) => coresOf(load, sale.headroom, costs));
    mine.forEach((load, index) => {
      const micros = planningMicros(load.cost, costs);
      const cost = micros === undefined ? `${symbolOf(load.cost, costs)} (to be measured)` : micro(micros);
      lines.push(`| ${index === 0 ? tierName(tier, sale) : ''} | ${load.requests} | ${grouped(load.perSecond)} | ${cost} | ${formatCores(cores[index]!)} |`);
    });
    if (mine.length > 1) lines.push(`| | **${tierName(tier, sale)}, in all** | | | **${formatCores(sumCores(cores))}** |`);
  }
  lines.push('', ...notes(sale, loads, costs));
  return lines.join('\n');
}

/** What the table's unknowns and the voucher's one core mean for this sale. */
function notes(sale: Sale, loads: readonly Load[], costs: CostTable): string[] {
  const notes: string[] = [];
  const unknowns = [...new Set(loads.map((load) => load.cost).filter((name) => planningMicros(name, costs) === undefined))];
  for (const name of unknowns) {
    const figure = costs[name];
    if (figure.unknown) notes.push(`- ${figure.unknown.symbol}: µs of ${figure.what}, to be measured by ${figure.unknown.toBeMeasured}.`);
  }
  // Until the edge's refusal is measured, what its aim (≥ 5× cheaper than the app's) would mean.
  const refusalsAtTheEdge = loads.find((load) => load.cost === 'edgeRefusal');
  const appRefusal = planningMicros('appRefusal', costs);
  const perMicroOfE = refusalsAtTheEdge && coresOf(refusalsAtTheEdge, sale.headroom, costs).perMicrosecondOf.e;
  if (perMicroOfE !== undefined && appRefusal !== undefined) {
    const atAim = appRefusal / 5;
    const cores = perMicroOfE * atAim;
    notes.push(
      `- At e's aim (the app's refusal ÷ 5 = ${decimals(atAim, 1)} µs, an aim, not a measurement) the edge's refusals would need ${decimals(cores, 1)} cores.`,
    );
  }
  const app = loads.filter((load) => load.tier === 'app');
  const appCores = sumCores(app.map((load) => coresOf(load, sale.headroom, costs))).known;
  const accepted = app.filter((load) => load.cost === 'appAccepted').map((load) => coresOf(load, sale.headroom, costs).known);
  if (appCores > 0 && accepted.length === 1 && accepted[0]! < appCores) {
    notes.push(`- Refusals and reads are ${Math.round((1 - accepted[0]! / appCores) * 100)} % of the app's cores; with the edge they never reach it.`);
  }
  const voucher = loads.find((load) => load.tier === 'voucher-master');
  if (voucher) {
    const cores = coresOf(voucher, sale.headroom, costs).known;
    notes.push(
      cores <= 1
        ? `- One voucher's decisions run on one Redis core: ${decimals(cores, 2)} of it, headroom included.`
        : `- One voucher's decisions need ${decimals(cores, 2)} cores, headroom included, and one Redis core is all one hash gets: sell it from ≥ ${Math.ceil(cores)} buckets (docs/flows/seckill-buckets.md).`,
    );
  }
  return notes;
}

/** Every figure the projection uses, with where it was measured. */
export function renderFigures(costs: CostTable = COSTS): string {
  const rows = Object.entries(costs).map(([name, figure]) => {
    const micros = planningMicros(name as CostName, costs);
    const runs = figure.runs.length === 0 ? '–' : figure.runs.map(micro).join(', ');
    const used = micros === undefined ? `${figure.unknown?.symbol ?? '?'}: to be measured` : micro(micros);
    return `| ${TIER_NAMES[figure.tier]} | ${figure.what} | ${runs} | ${used} | ${figure.source.replaceAll('|', '\\|')} |`;
  });
  return ['| tier | per | runs, µs | used, µs | measured |', '|---|---|---:|---:|---|', ...rows].join('\n');
}

/** The worked examples of docs/sizing.md: the figures, then the same sale with and without the edge. */
export const WORKED_EXAMPLES: ReadonlyArray<{ command: string; sale: Sale }> = [
  { command: 'npm run sizing -- --units 1000000 --buyers 10000000 --seconds 60 --queue rabbitmq', sale: { ...DEFAULTS, queue: 'rabbitmq' } },
  {
    command: 'npm run sizing -- --units 1000000 --buyers 10000000 --seconds 60 --queue rabbitmq --edge off',
    sale: { ...DEFAULTS, queue: 'rabbitmq', edge: false },
  },
];

export function renderBlock(): string {
  const examples = WORKED_EXAMPLES.flatMap(({ command, sale }) => ['', '```sh', command, '```', '', renderProjection(sale)]);
  return ['The figures (`scripts/sizing-costs.ts`):', '', renderFigures(), ...examples].join('\n');
}

/** The doc with its generated block replaced; throws when the markers are missing. */
export function withBlock(doc: string, block: string = renderBlock()): string {
  const start = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (start < 0 || end < start) throw new Error(`docs/sizing.md lacks the markers ${BEGIN} … ${END}`);
  return `${doc.slice(0, start)}${BEGIN}\n${block}\n${doc.slice(end)}`;
}

export const USAGE = `npm run sizing -- [options]
  --units N        units on sale (${DEFAULTS.units})
  --buyers N       buyers (${DEFAULTS.buyers})
  --seconds N      seconds the sale's requests arrive over (${DEFAULTS.seconds})
  --edge on|off    the edge in front of the app (on)
  --refreshes N    page loads per buyer before the start, besides the one at the start (${DEFAULTS.refreshes})
  --retries N      order requests a refused buyer sends again (${DEFAULTS.retries})
  --l1-miss X      share of the edge's reads that miss L1, 0..1 (${DEFAULTS.l1Miss})
  --headroom X     cores per core of measured CPU, ≥ 1 (${DEFAULTS.headroom})
  --queue stream|rabbitmq   how orders reach MySQL (${DEFAULTS.queue})
  --write          rewrite the worked examples of docs/sizing.md; --check: exit 1 when stale`;

export class UsageError extends Error {}

function numberOption(value: string | undefined, name: string, fallback: number, valid: (n: number) => boolean, rule: string): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed) || !valid(parsed)) throw new UsageError(`--${name} ${value}: ${rule}`);
  return parsed;
}

function choice<T extends string>(value: string | undefined, name: string, choices: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (!(choices as readonly string[]).includes(value)) throw new UsageError(`--${name} ${value}: one of ${choices.join(', ')}`);
  return value as T;
}

export function parseSale(args: readonly string[]): { sale: Sale; write: boolean; check: boolean; help: boolean } {
  const text = { type: 'string' } as const;
  let values;
  try {
    ({ values } = parseArgs({
      args: [...args],
      options: {
        units: text,
        buyers: text,
        seconds: text,
        edge: text,
        refreshes: text,
        retries: text,
        'l1-miss': text,
        headroom: text,
        queue: text,
        write: { type: 'boolean' },
        check: { type: 'boolean' },
        help: { type: 'boolean' },
      },
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const whole = (n: number) => Number.isInteger(n) && n >= 0;
  const positive = (n: number) => Number.isInteger(n) && n >= 1;
  const sale: Sale = {
    units: numberOption(values.units, 'units', DEFAULTS.units, positive, 'a whole number ≥ 1'),
    buyers: numberOption(values.buyers, 'buyers', DEFAULTS.buyers, positive, 'a whole number ≥ 1'),
    seconds: numberOption(values.seconds, 'seconds', DEFAULTS.seconds, (n) => n > 0, 'a number > 0'),
    edge: choice(values.edge, 'edge', ['on', 'off'], 'on') === 'on',
    refreshes: numberOption(values.refreshes, 'refreshes', DEFAULTS.refreshes, whole, 'a whole number ≥ 0'),
    retries: numberOption(values.retries, 'retries', DEFAULTS.retries, whole, 'a whole number ≥ 0'),
    l1Miss: numberOption(values['l1-miss'], 'l1-miss', DEFAULTS.l1Miss, (n) => n >= 0 && n <= 1, 'a share from 0 to 1'),
    headroom: numberOption(values.headroom, 'headroom', DEFAULTS.headroom, (n) => n >= 1, 'a number ≥ 1'),
    queue: choice(values.queue, 'queue', ['stream', 'rabbitmq'], DEFAULTS.queue),
  };
  return { sale, write: values.write === true, check: values.check === true, help: values.help === true };
}

function main(): void {
  let parsed;
  try {
    parsed = parseSale(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`${error.message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (parsed.help) return console.log(USAGE);
  if (parsed.write || parsed.check) {
    const current = readFileSync(SIZING_DOC, 'utf8');
    const next = withBlock(current);
    if (parsed.check && next !== current) {
      console.error('docs/sizing.md is stale: run npm run sizing -- --write');
      process.exit(1);
    }
    if (parsed.write && next !== current) writeFileSync(SIZING_DOC, next);
    return console.log(next === current ? 'docs/sizing.md is up to date' : 'docs/sizing.md written');
  }
  console.log(renderProjection(parsed.sale));
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) main();
