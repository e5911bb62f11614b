/**
 * The scenarios without a sale: `baseline` (one EVALSHA behind Fastify) and `shop-hot` (the
 * cached shop route beside the same JSON served from memory, on one server).
 */
import type { World } from '../harness/world.js';
import type { LoadTarget, Measurement, PhaseResult } from '../harness/measure.js';
import { startServer, type ServerProcess } from '../harness/processes.js';

export interface HttpResult {
  scenario: string;
  route: string;
  saturation: PhaseResult;
  fixedRate: PhaseResult;
  slices: PhaseResult[];
  /** The fixed-rate phase at another scenario's offered rate (the baseline at the order's). */
  matchedRate?: PhaseResult;
}

/** A scenario ready to be measured: its routes, and what to do with their measurements. */
export interface PreparedScenario<R> {
  targets: LoadTarget[];
  finish(measurements: Map<string, Measurement>): Promise<R>;
  /** Stops its server; safe to call more than once. */
  stop(): Promise<void>;
}

const SERVER_ENV = { SECKILL_WORKER: 'false' };

/** `alsoAtRateOf`: a scenario whose offered rate the baseline is also measured at (the order's, for its p99 target). */
export async function prepareBaseline(world: World, cpuProfDir?: string, alsoAtRateOf?: string): Promise<PreparedScenario<HttpResult>> {
  const server = await startServer({ env: { ...world.env, ...SERVER_ENV }, ...(cpuProfDir ? { cpuProfDir } : {}) });
  const target: LoadTarget = {
    name: 'baseline',
    url: server.url,
    serverPid: server.child.pid,
    source: { method: 'POST', next: () => ({ path: '/bench/evalsha' }) },
    ...(alsoAtRateOf ? { alsoAtRateOf } : {}),
  };
  return {
    targets: [target],
    finish: async (measurements) => {
      await server.stop();
      return result(target, 'POST /bench/evalsha', measurements);
    },
    stop: () => server.stop(),
  };
}

/** Resolves to [cached route, bare route]; one server serves both (profiled into `cpuProfDir` if given). */
export async function prepareShopHot(world: World, cpuProfDir?: string): Promise<PreparedScenario<[HttpResult, HttpResult]>> {
  const server = await startServer({ env: { ...world.env, ...SERVER_ENV }, ...(cpuProfDir ? { cpuProfDir } : {}) });
  try {
    const cachedPath = `/api/shop/${world.shopId}`;
    const barePath = `/bench/shop/${world.shopId}`;
    await sameAnswer(server, cachedPath, barePath);
    const cached: LoadTarget = {
      name: 'shop-hot',
      url: server.url,
      serverPid: server.child.pid,
      source: { method: 'GET', next: () => ({ path: cachedPath }) },
    };
    const bare: LoadTarget = {
      name: 'shop-hot bare route',
      url: server.url,
      serverPid: server.child.pid,
      source: { method: 'GET', next: () => ({ path: barePath }) },
    };
    return {
      targets: [cached, bare],
      finish: async (measurements) => {
        await server.stop();
        return [result(cached, 'GET /api/shop/{id}', measurements), result(bare, 'GET /bench/shop/{id}', measurements)];
      },
      stop: () => server.stop(),
    };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

function result(target: LoadTarget, route: string, measurements: Map<string, Measurement>): HttpResult {
  const measured = measurements.get(target.name);
  if (!measured) throw new Error(`${target.name} was not measured`);
  return { scenario: target.name, route, ...measured };
}

/** Both routes must give the same answer, or comparing them means nothing. */
async function sameAnswer(server: ServerProcess, cachedPath: string, barePath: string): Promise<void> {
  const [cachedBody, bareBody] = await Promise.all([fetchText(server.url + cachedPath), fetchText(server.url + barePath)]);
  if (cachedBody !== bareBody) throw new Error(`shop-hot: ${cachedPath} and ${barePath} answer differently:\n${cachedBody}\n${bareBody}`);
}

async function fetchText(url: string): Promise<string> {
  const response = await fetch(url);
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}: ${text.slice(0, 200)}`);
  return text;
}
