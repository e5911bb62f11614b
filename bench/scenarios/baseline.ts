/** `baseline`: one EVALSHA behind Fastify (the bench server's `POST /bench/evalsha`), the floor every Redis-backed request pays. */
import { startServer, type LoadTarget, type World } from '../harness/index.js';
import { httpResult, SERVER_ENV, type HttpResult, type PreparedScenario } from './prepared-scenario.js';

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
      return httpResult(target, 'POST /bench/evalsha', measurements);
    },
    stop: () => server.stop(),
  };
}
