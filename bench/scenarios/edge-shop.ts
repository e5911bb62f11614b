/**
 * The shop read at each level of the multi-level cache, beside `shop-hot` (the app's near cache):
 * `shop-redis`, the app reading the record from Redis (NEAR_CACHE_ENABLED=false), and
 * `edge-shop-l1` / `edge-shop-l2`, the edge's nginx (edge/, one worker) answering from its shared
 * dict or from the app's Redis record read by Lua, with an app behind it for whatever it passes
 * on. Each has a server (and an nginx) of its own, so that each target's processes are counted
 * alone; nginx's master and workers count like the other serving processes.
 */
import { loadConfig } from '../../src/infra/config.js';
import { startEdge, type Edge } from '../../kit/edge.js';
import {
  parseCounter,
  repeatedRequest,
  scrapeMetrics,
  serverEnvironment,
  startServer,
  type LoadTarget,
  type ServerProcess,
  type World,
} from '../harness/index.js';
import { httpResult, SERVER_ENV, type HttpResult, type PreparedScenario } from './prepared-scenario.js';

/** An edge's read: its measurements, and how many of the route's requests still reached the app behind it. */
export interface EdgeShopResult extends HttpResult {
  /** The app's answers of `GET /api/shop/:id` over the whole run (warm-ups and probes included). */
  reachedApp: number;
  /** Requests of all measured phases, for comparison with `reachedApp`. */
  measuredRequests: number;
}

const shopPath = (world: World) => `/api/shop/${world.shopId}`;

/** `shop-redis`: the app's own read with its near cache off: one Redis GET per request. */
export async function prepareShopRedis(world: World): Promise<PreparedScenario<HttpResult>> {
  const server = await startServer({ env: { ...world.env, ...SERVER_ENV, NEAR_CACHE_ENABLED: 'false' } });
  try {
    const path = shopPath(world);
    await answer(server.url, path);
    const target: LoadTarget = { name: 'shop-redis', url: server.url, serverPid: server.child.pid, source: repeatedRequest('GET', path) };
    return {
      targets: [target],
      finish: async (measurements) => {
        await server.stop();
        return httpResult(target, 'GET /api/shop/{id}', measurements);
      },
      stop: () => server.stop(),
    };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

/**
 * `edge-shop-l1` (the edge's defaults: L1 for 30 s, dropped by the push) or `edge-shop-l2` (L1's
 * life 0: no entry is ever stored, so every read goes to the record in Redis).
 */
export async function prepareEdgeShop(world: World, level: 'l1' | 'l2'): Promise<PreparedScenario<EdgeShopResult>> {
  const name = `edge-shop-${level}`;
  // Behind a proxy, as edge/README.md runs the app: both count the same client address.
  const env = { ...world.env, ...SERVER_ENV, TRUST_PROXY: '1' };
  const server = await startServer({ env });
  let edge: Edge | undefined;
  const stop = async () => {
    await edge?.stop();
    await server.stop();
  };
  try {
    const address = server.url.replace('http://', '');
    // One worker, as the app is one process: CPU per request is compared, not a machine's throughput.
    edge = await startEdge(loadConfig(serverEnvironment(env)), {
      salePool: [address],
      workers: 1,
      reads: level === 'l1' ? {} : { l1TtlMs: 0, push: false },
    });
    const path = shopPath(world);
    const fromApp = await answer(server.url, path); // the app's read stores the record the edge reads
    await answeredAtEdge(edge, path, fromApp);
    const before = await shopRequests(server);
    const target: LoadTarget = {
      name,
      url: edge.url,
      serverPid: server.child.pid,
      nginxPid: edge.pid,
      source: repeatedRequest('GET', path),
    };
    return {
      targets: [target],
      finish: async (measurements) => {
        const reachedApp = (await shopRequests(server)) - before;
        await stop();
        const result = httpResult(target, 'GET /api/shop/{id} at the edge', measurements);
        const phases = [...result.slices, result.fixedRate];
        return { ...result, reachedApp, measuredRequests: phases.reduce((sum, phase) => sum + phase.requests, 0) };
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * The edge answers the read itself (nginx adds `x-upstream` only to what the app answered) with
 * the app's body: else the scenario would measure a proxy, or another answer.
 */
async function answeredAtEdge(edge: Edge, path: string, fromApp: string): Promise<void> {
  // The first read may fill L1 from Redis; the second is the level's steady state.
  for (let i = 0; i < 2; i++) {
    const response = await fetch(edge.url + path);
    const body = await response.text();
    if (response.status !== 200 || body !== fromApp)
      throw new Error(`edge: GET ${path} answered ${response.status} ${body.slice(0, 200)}, the app ${fromApp.slice(0, 200)}`);
    const upstream = response.headers.get('x-upstream');
    if (i === 1 && upstream !== null) throw new Error(`edge: GET ${path} went to the app (${upstream}), not answered at the edge: ${await edge.errorLog()}`);
  }
}

/** The app's answers of the shop route so far, by its own metrics. */
async function shopRequests(server: ServerProcess): Promise<number> {
  const response = await scrapeMetrics(server.url);
  if (!response.ok) throw new Error(`GET /metrics answered ${response.status}`);
  return parseCounter(await response.text(), 'http_request_duration_seconds_count', 'route="/api/shop/:id"') ?? 0;
}

async function answer(base: string, path: string): Promise<string> {
  const response = await fetch(base + path);
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET ${base}${path} answered ${response.status}: ${text.slice(0, 200)}`);
  return text;
}
