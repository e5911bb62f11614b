/**
 * The sale through the edge, side by side (issue 41), in two pairs, each scenario with an app (and
 * an nginx) of its own so that each target's processes are counted alone:
 *
 * - `app-sold-out` / `edge-sold-out`: logged-in users order a sold-out voucher. The app answers
 *   from its sold-out memory after the session lookup; the edge's nginx answers from its view of
 *   the sale, the app behind it idle. Aim: the edge's refusal ≥ 5× cheaper in serving CPU.
 * - `proxy-order` / `edge-order`: orders that are all accepted (every voucher offered to each user
 *   once, with stock for all of them), through the edge's nginx with its Lua off (today's plain
 *   proxy) and with everything on. Aim: the edge's order ≤ 1.05× the proxy's.
 *
 * The order worker stays off in all four: what is compared is the request's path (the MySQL write
 * is the same whichever way the order came), and two workers on one stream would take each
 * other's orders, their CPU counted for the wrong target.
 */
import { loadConfig } from '../../src/infra/config.js';
import type { EdgeReadOptions } from '../../src/cli/edge-render.js';
import { REFUSALS } from '../../src/modules/seckill/index.js';
import { startEdge, type Edge } from '../../kit/edge.js';
import {
  parseCounter,
  scrapeMetrics,
  serverEnvironment,
  startServer,
  type BenchOptions,
  type BenchUser,
  type LoadTarget,
  type RequestSource,
  type ServerProcess,
  type World,
} from '../harness/index.js';
import { Sale, type Check } from '../sale/index.js';
import { httpResult, SERVER_ENV, type HttpResult, type PreparedScenario } from './prepared-scenario.js';

export type EdgeSaleScenario = 'app-sold-out' | 'edge-sold-out' | 'proxy-order' | 'edge-order';

/** A scenario of the sale through the edge: its measurements, what its answers said, and how many requests the app answered. */
export interface EdgeSaleResult extends HttpResult {
  scenario: EdgeSaleScenario;
  /** The app's answers of the order route over the whole run (warm-ups and probes included). */
  reachedApp: number;
  /** Requests of all measured phases, for comparison with `reachedApp`. */
  measuredRequests: number;
  /** Every answer the load got, over the whole run, by what it said. */
  answers: Record<string, number>;
  checks: Check[];
  pass: boolean;
}

/** Stock of the sold-out voucher: sold out in a few requests. */
const SOLD_OUT_STOCK = 10;
/** Planning figure for how many vouchers the order pair needs: more answers per second than it reaches here. */
const MAX_EXPECTED_RPS = 25_000;
/** How long the app's memory or the edge's view may take to know the sale is sold out. */
const KNOWN_WITHIN_MS = 10_000;

/** The name of the app's sold-out answer among a scenario's answers. */
const SOLD_OUT = 'the app\'s "Sold out"';
const ORDER_ROUTE = 'route="/api/voucher-order/seckill/:id"';
const orderPath = (voucher: string) => `/api/voucher-order/seckill/${voucher}`;

/** The processes a scenario loads: an app, and for all but `app-sold-out` an edge in front of it. */
interface Tiers {
  server: ServerProcess;
  edge: Edge | undefined;
  /** Where the load goes: the edge, else the app. */
  url: string;
  stop(): Promise<void>;
}

async function startTiers(world: World, reads: Partial<EdgeReadOptions> | undefined, cpuProfDir: string | undefined, extraEnv = {}): Promise<Tiers> {
  // Behind a proxy, as edge/README.md runs the app: both count the same client address.
  const env = { ...world.env, ...SERVER_ENV, ...extraEnv, ...(reads ? { TRUST_PROXY: '1' } : {}) };
  const server = await startServer({ env, ...(cpuProfDir ? { cpuProfDir } : {}) });
  try {
    // One worker, as the app is one process: CPU per request is compared, not a machine's throughput.
    const edge = reads && (await startEdge(loadConfig(serverEnvironment(env)), { salePool: [server.url.replace('http://', '')], workers: 1, reads }));
    const stop = async () => {
      await edge?.stop();
      await server.stop();
    };
    return { server, edge, url: edge?.url ?? server.url, stop };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

/** `app-sold-out` (the app alone) or `edge-sold-out` (the edge's defaults in front of an app): a sold-out voucher's orders. */
export async function prepareSoldOut(world: World, where: 'app' | 'edge', cpuProfDir?: string): Promise<PreparedScenario<EdgeSaleResult>> {
  const name = `${where}-sold-out` as const;
  const tiers = await startTiers(world, where === 'edge' ? {} : undefined, cpuProfDir);
  try {
    const [voucher] = await world.createVouchers(1, SOLD_OUT_STOCK);
    const path = orderPath(voucher!);
    const refusal = await sellOut(tiers.url, path, world.users);
    await (tiers.edge ? refusedAtEdge(tiers.edge, path, world.users, refusal) : refusedFromMemory(tiers.server, path, world.users, refusal));
    const source = new Refusals(path, world.users, refusal);
    return await prepared(name, 'POST /api/voucher-order/seckill/{id}, sold out', tiers, source, {
      answers: () => source.answers,
      // How many the edge passed on is a figure, not a check: it passes on whatever it is not sure of
      // (its view not confirmed fresh within its bound, as on a busy machine), which is right.
      checks: () => [onlyAnswer(source.answers, SOLD_OUT)],
    });
  } catch (error) {
    await tiers.stop();
    throw error;
  }
}

/** `proxy-order` (the edge's nginx, its Lua off) or `edge-order` (everything on): orders that are all accepted. */
export async function prepareOrderThroughNginx(
  world: World,
  options: Pick<BenchOptions, 'durationSeconds'>,
  through: 'proxy' | 'edge',
  cpuProfDir?: string,
): Promise<PreparedScenario<EdgeSaleResult>> {
  const name = `${through}-order` as const;
  // The per-user limit kept on (its cost is part of an order) but far above what a user sends here:
  // the users come round every U requests, faster than 5 a second in a short run of few users.
  const tiers = await startTiers(world, through === 'proxy' ? { enabled: false, sales: false } : {}, cpuProfDir, { ORDER_RATE_LIMIT_PER_USER: '1000000' });
  try {
    // Stock for every user on each voucher: request i is user i mod U buying voucher ⌊i / U⌋, each
    // one accepted until the vouchers wrap round.
    const plannedRequests = (2.5 + 2 * options.durationSeconds) * MAX_EXPECTED_RPS;
    const vouchers = await world.createVouchers(Math.min(500, Math.ceil(plannedRequests / world.users.length)), world.users.length);
    const sale = new Sale(vouchers, world.users);
    return await prepared(name, 'POST /api/voucher-order/seckill/{id}, accepted', tiers, sale, {
      answers: () => saleAnswers(sale),
      checks: (reachedApp) => [
        onlyAnswer(saleAnswers(sale), 'accepted'),
        // The edge never accepts an order: the app answered at least every one the load was told of.
        {
          name: 'every accepted order answered by the app',
          pass: reachedApp >= sale.accepted.size,
          detail: `${sale.accepted.size} accepted, the app answered ${reachedApp} order requests`,
        },
      ],
    });
  } catch (error) {
    await tiers.stop();
    throw error;
  }
}

/** What a scenario makes of its answers once measured. */
interface Verdicts {
  /** Every answer of the run, by what it said. */
  answers(): Record<string, number>;
  /** `reachedApp`: the order route's requests the app answered over the run. */
  checks(reachedApp: number): Check[];
}

/** The target of a prepared scenario, and its result with the app's count of the order route and the checks. */
async function prepared(
  name: EdgeSaleScenario,
  route: string,
  tiers: Tiers,
  source: RequestSource,
  verdicts: Verdicts,
): Promise<PreparedScenario<EdgeSaleResult>> {
  const before = await orderRequests(tiers.server);
  const target: LoadTarget = {
    name,
    url: tiers.url,
    serverPid: tiers.server.child.pid,
    ...(tiers.edge ? { nginxPid: tiers.edge.pid } : {}),
    source,
  };
  return {
    targets: [target],
    finish: async (measurements) => {
      const reachedApp = (await orderRequests(tiers.server)) - before;
      await tiers.stop();
      const result = httpResult(target, route, measurements);
      const measuredRequests = [...result.slices, result.fixedRate].reduce((sum, phase) => sum + phase.requests, 0);
      const checks = verdicts.checks(reachedApp);
      return { ...result, scenario: name, reachedApp, measuredRequests, answers: verdicts.answers(), checks, pass: checks.every((check) => check.pass) };
    },
    stop: () => tiers.stop(),
  };
}

/** The load of the sold-out pair: every user in turn orders the one sold-out voucher; the answers counted by what they said. */
class Refusals implements RequestSource {
  readonly method = 'POST' as const;
  readonly answers: Record<string, number> = {};
  private index = 0;

  constructor(
    private readonly path: string,
    private readonly users: readonly BenchUser[],
    /** The app's sold-out answer, byte for byte. */
    private readonly refusal: string,
  ) {}

  next() {
    const user = this.users[this.index++ % this.users.length]!;
    return { path: this.path, headers: { authorization: user.token } };
  }

  onResponse(status: number, body: string): void {
    const key = status === 200 && body === this.refusal ? SOLD_OUT : `${status} ${body.slice(0, 80)}`;
    this.answers[key] = (this.answers[key] ?? 0) + 1;
  }
}

/** A sale's answers by what they said: accepted, each refusal, anything else. */
function saleAnswers(sale: Sale): Record<string, number> {
  return { ...(sale.accepted.size > 0 ? { accepted: sale.accepted.size } : {}), ...sale.refused, ...sale.unexpected };
}

function onlyAnswer(answers: Record<string, number>, expected: string): Check {
  const others = Object.entries(answers).filter(([key]) => key !== expected);
  return {
    name: `every answer ${expected}`,
    pass: (answers[expected] ?? 0) > 0 && others.length === 0,
    detail: `${answers[expected] ?? 0} ${expected}${others.length > 0 ? `; others: ${others.map(([key, n]) => `${n} × ${key}`).join(', ')}` : ''}`,
  };
}

/** Sells the voucher out through `base`, one buyer after another; returns the app's sold-out answer. */
async function sellOut(base: string, path: string, users: readonly BenchUser[]): Promise<string> {
  for (const user of users.slice(0, SOLD_OUT_STOCK * 3)) {
    const { status, body } = await order(base, path, user);
    if (status === 200 && body.startsWith('{"success":true')) continue;
    if (status === 200 && errorMsg(body) === REFUSALS.soldOut) return body;
    throw new Error(`selling out ${base}${path}: answered ${status} ${body.slice(0, 200)}`);
  }
  throw new Error(`selling out ${base}${path}: not sold out after ${SOLD_OUT_STOCK * 3} buyers`);
}

/** Waits until the app answers the voucher's orders from its sold-out memory (no Redis command), with the sold-out answer. */
async function refusedFromMemory(server: ServerProcess, path: string, users: readonly BenchUser[], refusal: string): Promise<void> {
  await within(`${server.url}${path} refused from the app's sold-out memory`, async () => {
    const before = await soldOutKnown(server);
    const { status, body } = await order(server.url, path, users[0]!);
    if (status !== 200 || body !== refusal) throw new Error(`answered ${status} ${body.slice(0, 200)}, not ${refusal}`);
    return (await soldOutKnown(server)) > before;
  });
}

/** Waits until the edge answers the voucher's orders itself (nginx adds `x-upstream` only to what the app answered), with the app's sold-out answer. */
async function refusedAtEdge(edge: Edge, path: string, users: readonly BenchUser[], refusal: string): Promise<void> {
  await within(`${edge.url}${path} refused at the edge`, async () => {
    const { status, body, upstream } = await order(edge.url, path, users[0]!);
    if (status !== 200 || body !== refusal) throw new Error(`answered ${status} ${body.slice(0, 200)}, not ${refusal}: ${await edge.errorLog()}`);
    return upstream === null;
  });
}

/** Tries `done` until it says so, for KNOWN_WITHIN_MS; an error it throws ends the wait at once. */
async function within(what: string, done: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + KNOWN_WITHIN_MS;
  while (!(await done())) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${KNOWN_WITHIN_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function order(base: string, path: string, user: BenchUser): Promise<{ status: number; body: string; upstream: string | null }> {
  const response = await fetch(base + path, { method: 'POST', headers: { authorization: user.token } });
  return { status: response.status, body: await response.text(), upstream: response.headers.get('x-upstream') };
}

function errorMsg(body: string): string | undefined {
  try {
    return (JSON.parse(body) as { errorMsg?: string }).errorMsg;
  } catch {
    return undefined;
  }
}

/** The app's answers of the order route so far, by its own metrics. */
async function orderRequests(server: ServerProcess): Promise<number> {
  return counter(server, 'http_request_duration_seconds_count', ORDER_ROUTE);
}

/** Orders the app refused from its sold-out memory so far. */
async function soldOutKnown(server: ServerProcess): Promise<number> {
  return counter(server, 'seckill_requests_total', 'outcome="sold-out-known"');
}

async function counter(server: ServerProcess, name: string, label: string): Promise<number> {
  const response = await scrapeMetrics(server.url);
  if (!response.ok) throw new Error(`GET /metrics answered ${response.status}`);
  return parseCounter(await response.text(), name, label) ?? 0;
}
