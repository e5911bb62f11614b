/**
 * The scenarios without a sale: `baseline` (one EVALSHA behind Fastify) and `shop-hot` (the
 * cached shop route beside the same JSON served from memory). Each gets a server of its own.
 */
import type { BenchOptions } from './options.js';
import type { World } from './world.js';
import { measure, type PhaseResult, type RequestSource } from './load.js';
import { startServer, type ServerProcess } from './processes.js';
import type { Progress } from './progress.js';

export interface HttpResult {
  scenario: string;
  route: string;
  saturation: PhaseResult;
  fixedRate: PhaseResult;
}

const SERVER_ENV = { SECKILL_WORKER: 'false' };


export async function runBaseline(options: BenchOptions, world: World, progress: Progress): Promise<HttpResult> {
  const server = await startServer({ env: { ...world.env, ...SERVER_ENV } });
  try {
    return await measureRoute('baseline', server, { method: 'POST', next: () => ({ path: '/bench/evalsha' }) }, options, progress);
  } finally {
    await server.stop();
  }
}

/** Returns [cached route, bare route]. */
export async function runShopHot(options: BenchOptions, world: World, progress: Progress): Promise<[HttpResult, HttpResult]> {
  const server = await startServer({ env: { ...world.env, ...SERVER_ENV } });
  try {
    const cachedPath = `/api/shop/${world.shopId}`;
    const barePath = `/bench/shop/${world.shopId}`;
    // Both must give the same answer, or the comparison means nothing.
    const [cachedBody, bareBody] = await Promise.all([fetchText(server.url + cachedPath), fetchText(server.url + barePath)]);
    if (cachedBody !== bareBody) throw new Error(`shop-hot: ${cachedPath} and ${barePath} answer differently:\n${cachedBody}\n${bareBody}`);
    const bare = await measureRoute('shop-hot (bare route)', server, { method: 'GET', next: () => ({ path: barePath }) }, options, progress);
    const cached = await measureRoute('shop-hot', server, { method: 'GET', next: () => ({ path: cachedPath }) }, options, progress);
    return [cached, bare];
  } finally {
    await server.stop();
  }
}

async function measureRoute(scenario: string, server: ServerProcess, source: RequestSource, options: BenchOptions, progress: Progress): Promise<HttpResult> {
  const phases = await measure(server.url, source, options, (label, seconds) => progress.step(`${scenario}: ${label}`, seconds));
  return { scenario, route: `${source.method} ${source.next().path.replace(/\/\d+$/, '/{id}')}`, ...phases };
}

async function fetchText(url: string): Promise<string> {
  const response = await fetch(url);
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}: ${text.slice(0, 200)}`);
  return text;
}
