/**
 * The sale through the edge, side by side (issue 41), in two pairs, whose slices take turns, so
 * that each slice's CPU is its own target's:
 *
 * - `app-sold-out` / `edge-sold-out`: logged-in users order a sold-out voucher. The app answers
 *   from its sold-out memory after the session lookup; the edge's nginx answers from its view of
 *   the sale, the app behind it idle. Aim: the edge's refusal ≥ 5× cheaper in serving CPU.
 * - `proxy-order` / `edge-order`: orders that are all accepted (every voucher offered to each user
 *   once, with stock for all of them), through the edge's nginx with its Lua off (today's plain
 *   proxy) and with everything on, both in front of one app. Aim: the edge's order ≤ 1.05× the proxy's.
 *
 * The sold-out pair is saturated by wrk (harness/wrk.ts), the order pair by autocannon (its Sale
 * keeps what each answer said).
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
  type WrkRequests,
} from '../harness/index.js';
import { Sale, type Check } from '../sale/index.js';
import { httpResult, SERVER_ENV, type HttpResult, type PreparedScenario } from './prepared-scenario.js';

export type EdgeSaleScenario = 'app-sold-out' | 'edge-sold-out' | 'proxy-order' | 'edge-order';

/** A scenario of the sale through the edge: its measurements, what its answers said, and how many requests the app answered. */
export interface EdgeSaleResult extends HttpResult {
  scenario: EdgeSaleScenario;
  /**
   * The app's answers of the order route over the whole run (warm-ups and probes included); null
   * for the order pair, whose one app answers both (every order: its check counts them together).
   */
  reachedApp: number | null;
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

async function startTiers(world: World, reads: Partial<EdgeReadOptions> | undefined, cpuProfDir: string | undefined): Promise<Tiers> {
  // Behind a proxy, as edge/README.md runs the app: both count the same client address.
  const env = { ...world.env, ...SERVER_ENV, ...(reads ? { TRUST_PROXY: '1' } : {}) };
  const server = await startServer({ env, ...(cpuProfDir ? { cpuProfDir } : {}) });
  try {
    const edge = reads && (await startEdgeFor(env, server, reads));
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

/** An edge in front of `server`, rendered from the app's environment. One worker, as the app is one process: CPU per request is compared, not a machine's throughput. */
function startEdgeFor(env: Record<string, string>, server: ServerProcess, reads: Partial<EdgeReadOptions>): Promise<Edge> {
  return startEdge(loadConfig(serverEnvironment(env)), { salePool: [server.url.replace('http://', '')], workers: 1, reads });
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

/** Today's plain proxy: the edge's nginx with its Lua off. */
const PLAIN_PROXY: Partial<EdgeReadOptions> = { enabled: false, sales: false };

/**
 * `proxy-order` (the edge's nginx, its Lua off) and `edge-order` (everything on), those named:
 * orders that are all accepted, through two nginx in front of one app, so that the pair differs
 * by its nginx alone (two app processes differ by more than the few per cent judged here; the
 * slices take turns, so each slice's app CPU is its own target's).
 */
export async function prepareOrders(
  world: World,
  options: Pick<BenchOptions, 'durationSeconds'>,
  through: ReadonlyArray<'proxy' | 'edge'>,
  cpuProfDir?: string,
): Promise<PreparedScenario<EdgeSaleResult[]>> {
  // The per-user limit kept on (its cost is part of an order) but far above what a user sends here:
  // the users come round every U requests, faster than 5 a second in a short run of few users.
  const env = { ...world.env, ...SERVER_ENV, TRUST_PROXY: '1', ORDER_RATE_LIMIT_PER_USER: '1000000' };
  const server = await startServer({ env, ...(cpuProfDir ? { cpuProfDir } : {}) });
  const edges: Edge[] = [];
  const stop = async () => {
    for (const edge of edges) await edge.stop();
    await server.stop();
  };
  try {
    // Stock for every user on each voucher: request i is user i mod U buying voucher ⌊i / U⌋, each
    // one accepted until the vouchers wrap round.
    const plannedRequests = (2.5 + 2 * options.durationSeconds) * MAX_EXPECTED_RPS;
    const count = Math.min(500, Math.ceil(plannedRequests / world.users.length));
    const routes: Array<{ target: LoadTarget; sale: Sale }> = [];
    for (const kind of through) {
      const edge = await startEdgeFor(env, server, kind === 'proxy' ? PLAIN_PROXY : {});
      edges.push(edge);
      const sale = new Sale(await world.createVouchers(count, world.users.length), world.users);
      routes.push({ target: { name: `${kind}-order`, url: edge.url, serverPid: server.child.pid, nginxPid: edge.pid, source: sale }, sale });
    }
    const before = await orderRequests(server);
    return {
      targets: routes.map((route) => route.target),
      finish: async (measurements) => {
        const reachedApp = (await orderRequests(server)) - before;
        await stop();
        // The edge never accepts an order: the app answered at least every one the load was told of.
        const accepted = routes.reduce((sum, route) => sum + route.sale.accepted.size, 0);
        const answeredByApp: Check = {
          name: 'every accepted order answered by the app',
          pass: reachedApp >= accepted,
          detail: `${accepted} accepted through ${through.length} nginx, the app behind them answered ${reachedApp} order requests`,
        };
        return routes.map(({ target, sale }) => {
          const result = httpResult(target, 'POST /api/voucher-order/seckill/{id}, accepted', measurements);
          const checks = [onlyAnswer(saleAnswers(sale), 'accepted'), answeredByApp];
          return {
            ...result,
            scenario: target.name as EdgeSaleScenario,
            reachedApp: null,
            measuredRequests: measuredRequests(result),
            answers: saleAnswers(sale),
            checks,
            pass: checks.every((check) => check.pass),
          };
        });
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** What a scenario makes of its answers once measured. */
interface Verdicts {
  /** Every answer of the run, by what it said. */
  answers(): Record<string, number>;
  checks(): Check[];
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
      const checks = verdicts.checks();
      return {
        ...result,
        scenario: name,
        reachedApp,
        measuredRequests: measuredRequests(result),
        answers: verdicts.answers(),
        checks,
        pass: checks.every((check) => check.pass),
      };
    },
    stop: () => tiers.stop(),
  };
}

/** Requests of all measured phases: the saturation slices and the fixed rate. */
function measuredRequests(result: HttpResult): number {
  return [...result.slices, result.fixedRate].reduce((sum, phase) => sum + phase.requests, 0);
}

/** The load of the sold-out pair: every user in turn orders the one sold-out voucher; the answers counted by what they said. */
class Refusals implements RequestSource {
  readonly method = 'POST' as const;
  readonly answers: Record<string, number> = {};
  /** The same orders for wrk: a refusal changes nothing, so the answers wrk drops when it stops cost no check. */
  readonly wrk: WrkRequests;
  private index = 0;

  constructor(
    private readonly path: string,
    private readonly users: readonly BenchUser[],
    /** The app's sold-out answer, byte for byte. */
    private readonly refusal: string,
  ) {
    this.wrk = { method: this.method, path, headerSets: users.map((user) => ({ authorization: user.token })) };
  }

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
