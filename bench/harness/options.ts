/**
 * Command-line options of `npm run bench`, parsed and checked once: a bad value stops the run
 * before anything starts, with a message naming the option.
 */
import { parseArgs } from 'node:util';

export const SCENARIOS = [
  'baseline',
  'seckill-async',
  'seckill-rabbitmq',
  'seckill-gated',
  'seckill-sync',
  'seckill-semaphore',
  'shop-hot',
  'shop-redis',
  'edge-shop-l1',
  'edge-shop-l2',
  'app-sold-out',
  'edge-sold-out',
  'proxy-order',
  'edge-order',
  'id',
  'lock',
] as const;
/**
 * Run only when named: gulimall's design, beside ours for comparison (docs/benchmarks-history.md);
 * the shop read from Redis and at the edge (an app and an nginx each), beside shop-hot
 * (docs/BENCHMARKS.md, "The edge's reads"); the sale through the edge, in pairs ("The sale at the edge").
 */
const EDGE_SALE: readonly ScenarioName[] = ['app-sold-out', 'edge-sold-out', 'proxy-order', 'edge-order'];
const ON_REQUEST: readonly ScenarioName[] = ['seckill-semaphore', 'seckill-gated', 'shop-redis', 'edge-shop-l1', 'edge-shop-l2', ...EDGE_SALE];
/** The scenarios that need servers the harness starts (bench routes, an app with other settings, an edge). */
const OWN_SERVERS: readonly ScenarioName[] = ['baseline', 'shop-hot', 'seckill-semaphore', 'shop-redis', 'edge-shop-l1', 'edge-shop-l2', ...EDGE_SALE];
export type ScenarioName = (typeof SCENARIOS)[number];

export interface BenchOptions {
  scenarios: ScenarioName[];
  /** Seconds of each measured phase (saturation, then fixed rate). */
  durationSeconds: number;
  /** Slices of the saturation phase: round r runs slice r of every target in turn (harness/measure.ts). */
  rounds: number;
  /** Milliseconds of each case of the in-process micro-benchmarks (ids, locks), per mode. */
  microMs: number;
  /** Connections of the saturation phase. */
  connections: number;
  /** Connections of the fixed-rate (latency) phase. */
  latencyConnections: number;
  /** Offered rate of the latency phase: an absolute req/s, or else this fraction of the scenario's saturation rate. */
  rate: number | undefined;
  rateFraction: number;
  /**
   * Ceiling of that fraction: above ~15,000 req/s on two cores the open-loop generator itself
   * becomes the bottleneck (see its lag column) and the latencies measure it, not the server.
   */
  maxRate: number;
  /** Measure the fixed-rate phase with autocannon's rate mode instead of the open loop (to compare the two). */
  autocannonRate: boolean;
  /** Saturate with autocannon even where wrk can send the requests (the shop reads, the sold-out pair), to compare the two generators. */
  autocannonOnly: boolean;
  /** Users with sessions that place the orders. */
  users: number;
  /** Stock of each voucher; every voucher is offered to every user once (a sale of `users` buyers for `stock` units). */
  stock: number;
  /**
   * A running deployment to load instead of servers the harness starts (e.g. nginx in front of
   * several instances); its database and Redis come from the servers' own environment variables.
   */
  target: string | undefined;
  /** Redis and MySQL the servers and the checks use (Redis: only with `sharedRedis`; else the run starts its own). */
  redisUrl: string;
  sharedRedis: boolean;
  mysqlServerUrl: string;
  /** Print one JSON document on stdout instead of Markdown. */
  json: boolean;
  /** Write docs/BENCHMARKS.md (generated section) and the SVG chart. */
  write: boolean;
  /** Where the Markdown and SVG go when written. */
  docsDir: string;
  /** Profile the baseline, seckill-async and shop-hot servers (node --cpu-prof), and the loaded apps of the sale at the edge, and summarise where their time goes. */
  cpuProf: boolean;
  /** How long to wait for the order worker to drain after a sale. */
  drainTimeoutSeconds: number;
  /** The servers' LOG_LEVEL: `warn` by default (the load's own lines out of the measurement); `info` is a deployment's default. */
  logLevel: LogLevel;
  /** The command line, as given, for the report. */
  commandLine: string;
}

const LOG_LEVELS = ['warn', 'info'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export class OptionsError extends Error {
  override name = 'OptionsError';
}

export const USAGE = `npm run bench -- [options]
npm run bench -- growth [--help]         how memory, CPU and latency grow (docs/bench-growth.md)
npm run bench -- hot-voucher [--help]    one voucher: one Redis core, and B buckets on a Cluster (docs/bench-hot-voucher.md)

  --scenarios LIST        comma-separated, from: ${SCENARIOS.join(', ')}
                          (default: all but seckill-semaphore, gulimall's design,
                          seckill-gated, a sale behind purchase tokens, and the shop read
                          without the near cache (shop-redis) and at the edge's nginx from
                          its L1 or L2 (edge-shop-l1, edge-shop-l2), and the sale through
                          the edge (app-sold-out, edge-sold-out, proxy-order, edge-order):
                          run when named)
  --duration SECONDS      each measured phase (default 10)
  --rounds N              slices of the saturation phase, taking turns round the targets (default 5)
  --connections N         connections at saturation (default 100)
  --latency-connections N connections at the fixed rate (default 1000)
  --rate N                offered req/s of the latency phase (default: --rate-fraction of saturation)
  --rate-fraction F       0 < F < 1 (default 0.5)
  --max-rate N            ceiling of the rate from --rate-fraction (default 8000)
  --autocannon-rate       fixed-rate phase by autocannon's rate mode instead of the open loop
                          (for comparison only: see bench/harness/saturate.ts on why its figures mislead)
  --autocannon-only       saturation by autocannon for every scenario; by default the shop
                          reads and the sold-out pair, whose answers change nothing, are
                          saturated by wrk (bench/harness/wrk.ts says why)
  --users N               buyers with sessions (default 5000)
  --stock N               stock of each voucher (default: users / 2)
  --drain-timeout SECONDS wait for the order worker after a sale (default 180)
  --log-level LEVEL       the servers' LOG_LEVEL: warn (default) or info (a deployment's default)
  --cpu-prof              profile the baseline, seckill-async and shop-hot servers (and those of
                          app-sold-out, proxy-order and edge-order) and summarise them
  --json                  one JSON document on stdout instead of Markdown
  --no-write              do not update docs/BENCHMARKS.md and docs/bench/chart.svg
  --docs-dir DIR          where BENCHMARKS.md and bench/chart.svg are written (default docs)
  --target URL            load a running deployment instead of starting servers: only the
                          seckill scenario its strategy runs (seckill-async or seckill-sync);
                          MYSQL_URL, REDIS_URL or REDIS_CLUSTER_NODES, REDIS_KEY_PREFIX and
                          SECKILL_STREAM_SHARDS must be those of its servers
  --shared-redis          use REDIS_URL instead of a redis-server the run starts on a free port
                          (others' commands then count in the Redis CPU per request)
  --smoke                 a few seconds with small numbers, writes nothing (used by the tests)
  --help

Environment: REDIS_URL (default redis://127.0.0.1:6379/0), MYSQL_SERVER_URL (default
mysql://root@127.0.0.1:3306). The run uses a database and key prefix of its own, removed afterwards.`;

export function parseBenchOptions(argv: string[], env: Record<string, string | undefined> = process.env): BenchOptions | 'help' {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        scenarios: { type: 'string' },
        duration: { type: 'string' },
        rounds: { type: 'string' },
        connections: { type: 'string' },
        'latency-connections': { type: 'string' },
        rate: { type: 'string' },
        'rate-fraction': { type: 'string' },
        'max-rate': { type: 'string' },
        'autocannon-rate': { type: 'boolean', default: false },
        'autocannon-only': { type: 'boolean', default: false },
        users: { type: 'string' },
        stock: { type: 'string' },
        'drain-timeout': { type: 'string' },
        'cpu-prof': { type: 'boolean', default: false },
        'log-level': { type: 'string', default: 'warn' },
        json: { type: 'boolean', default: false },
        'no-write': { type: 'boolean', default: false },
        'docs-dir': { type: 'string' },
        target: { type: 'string' },
        smoke: { type: 'boolean', default: false },
        'shared-redis': { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new OptionsError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) return 'help';

  const smoke = values.smoke;
  const users = int('--users', values.users, smoke ? 300 : 5_000, 1, 1_000_000);
  const scenarioList = values.scenarios ?? (positionals.length > 0 ? positionals.join(',') : undefined);
  const target = values.target === undefined ? undefined : targetUrl(values.target);
  const chosen = scenarios(scenarioList ?? (target ? 'seckill-async' : undefined));
  const needServer = chosen.filter((name) => OWN_SERVERS.includes(name));
  if (target && needServer.length > 0) {
    throw new OptionsError(`--target: ${needServer.join(' and ')} need the bench routes of a server the harness starts; leave them out`);
  }
  if (target && chosen.includes('seckill-async') && chosen.includes('seckill-sync')) {
    throw new OptionsError('--target: the deployment runs one strategy; name seckill-async or seckill-sync');
  }
  const durationSeconds = number('--duration', values.duration, smoke ? 1.5 : 10, 0.5, 3600);
  return {
    scenarios: chosen,
    target,
    durationSeconds,
    rounds: int('--rounds', values.rounds, 5, 1, 1_000),
    // Half a phase each; a smoke run only shows that they run (16 lock cases, 6 id cases).
    microMs: smoke ? 150 : (durationSeconds * 1000) / 2,
    connections: int('--connections', values.connections, smoke ? 20 : 100, 1, 10_000),
    latencyConnections: int('--latency-connections', values['latency-connections'], smoke ? 20 : 1_000, 1, 10_000),
    rate: values.rate === undefined ? (smoke ? 200 : undefined) : int('--rate', values.rate, 0, 1, 10_000_000),
    rateFraction: number('--rate-fraction', values['rate-fraction'], 0.5, 0.01, 0.99),
    maxRate: int('--max-rate', values['max-rate'], 8_000, 1, 10_000_000),
    autocannonRate: values['autocannon-rate'],
    autocannonOnly: values['autocannon-only'],
    users,
    stock: int('--stock', values.stock, Math.max(1, Math.floor(users / 2)), 1, 10_000_000),
    redisUrl: env.REDIS_URL ?? 'redis://127.0.0.1:6379/0',
    sharedRedis: values['shared-redis'],
    mysqlServerUrl: (env.MYSQL_SERVER_URL ?? 'mysql://root@127.0.0.1:3306').replace(/\/$/, ''),
    json: values.json,
    write: !values['no-write'] && !smoke,
    docsDir: values['docs-dir'] ?? 'docs',
    cpuProf: values['cpu-prof'],
    drainTimeoutSeconds: number('--drain-timeout', values['drain-timeout'], smoke ? 60 : 180, 1, 3600),
    logLevel: logLevel(values['log-level']),
    commandLine: ['npm run bench', ...(argv.length > 0 ? ['--', ...argv] : [])].join(' '),
  };
}

function logLevel(text: string): LogLevel {
  const level = LOG_LEVELS.find((name) => name === text);
  if (level === undefined) throw new OptionsError(`--log-level: ${text} is not one of ${LOG_LEVELS.join(', ')}`);
  return level;
}

function scenarios(list: string | undefined): ScenarioName[] {
  if (list === undefined || list === '' || list === 'all') return SCENARIOS.filter((name) => !ON_REQUEST.includes(name));
  const names = list
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  for (const name of names) {
    if (!(SCENARIOS as readonly string[]).includes(name)) {
      throw new OptionsError(`--scenarios: unknown scenario "${name}" (known: ${SCENARIOS.join(', ')})`);
    }
  }
  // Run in the documented order whatever order they were named in: baselines come first.
  return SCENARIOS.filter((name) => names.includes(name));
}

function targetUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http');
    return url.origin;
  } catch {
    throw new OptionsError(`--target: expected an http:// URL, got "${raw}"`);
  }
}

function number(flag: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value) || value < min || value > max) {
    throw new OptionsError(`${flag}: expected a number from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

function int(flag: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  const value = number(flag, raw, fallback, min, max);
  if (!Number.isInteger(value)) throw new OptionsError(`${flag}: expected a whole number, got "${raw ?? value}"`);
  return value;
}
