/**
 * What the edge's sale path costs nginx, step by step: `npx tsx bench/costs/edge-sale.ts`.
 *
 * One app and three edges in front of it (kit/edge.ts, one worker each): one with everything on,
 * one with its Lua off (reads and sales: today's plain proxy), one with the sale's refusals off. Closed-loop phases of 100
 * connections, each measured as nginx's CPU (master + worker) per request, in rounds that take
 * turns:
 *
 * - `floor`: `POST /metrics` with a login token, which nginx answers itself (`return 404`): an
 *   HTTP request through nginx without Lua;
 * - `refusal`: a sold-out voucher's order, answered by the edge's Lua;
 * - `l1`: `GET /api/shop/{id}` from the edge's L1 (no token: a logged-in read goes to the app), for comparison;
 * - `order-proxy` / `order-reads` / `order-edge`: an order that is accepted (every user buys each
 *   voucher once, stock for all), through the Lua-off edge, one with the reads on and the sale's
 *   refusals off, and the full one; the app's and Redis' CPU beside.
 *
 * With PERF=1 the edge's worker is sampled by `perf record -g` during the refusal and the
 * edge's order phases, and the top of `perf report` printed (LuaJIT's compiled code shows as
 * unnamed addresses, its interpreter as `lj_*`).
 */
import { execFileSync, spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/infra/config.js';
import { startRedisServer } from '../../kit/redis-servers.js';
import { startEdge, type Edge } from '../../kit/edge.js';
import { childPids, createOwnWorld, processCpuMicros, redisPid, saturate, serverEnvironment, startServer, type RequestSource } from '../harness/index.js';
import { Sale } from '../sale/index.js';

const SECONDS = Number(process.env.SECONDS_PER_PHASE ?? 4);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const USERS = 5_000;
const CONNECTIONS = 100;

const redisServer = await startRedisServer();
const world = await createOwnWorld({
  redisUrl: redisServer.url,
  mysqlServerUrl: (process.env.MYSQL_SERVER_URL ?? 'mysql://root@127.0.0.1:3306').replace(/\/$/, ''),
  users: USERS,
  name: `hmdp_bench_edgesale_${process.pid}`,
});
const env = { ...world.env, SECKILL_WORKER: 'false', TRUST_PROXY: '1', ORDER_RATE_LIMIT_PER_USER: '1000000' };
const server = await startServer({ env });
const config = loadConfig(serverEnvironment(env));
const salePool = [server.url.replace('http://', '')];
const edges: Edge[] = [];
try {
  const full = await startEdge(config, { salePool, workers: 1 });
  edges.push(full);
  const plain = await startEdge(config, { salePool, workers: 1, reads: { enabled: false, sales: false } });
  edges.push(plain);
  const readsOnly = await startEdge(config, { salePool, workers: 1, reads: { sales: false } });
  edges.push(readsOnly);
  const token = world.users[0]!.token;

  const [soldOut] = await world.createVouchers(1, 1);
  const soldOutPath = `/api/voucher-order/seckill/${soldOut!}`;
  for (const user of world.users.slice(0, 3)) await fetch(full.url + soldOutPath, { method: 'POST', headers: { authorization: user.token } });
  await fetch(`${server.url}/api/shop/${world.shopId}`);
  // Until the edge answers the refusal itself (nginx adds x-upstream only to the app's answers).
  for (let tries = 0; ; tries++) {
    const response = await fetch(full.url + soldOutPath, { method: 'POST', headers: { authorization: token } });
    const body = await response.text();
    if (!body.includes('Sold out')) throw new Error(`not sold out: ${body}`);
    if (response.headers.get('x-upstream') === null) break;
    if (tries > 200) throw new Error('the edge never answered the refusal');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const orderVouchers = (count: number) => world.createVouchers(count, USERS);
  const fixed = (method: 'GET' | 'POST', path: string, headers: Record<string, string> = { authorization: token }): RequestSource => ({
    method,
    next: () => ({ path, headers }),
  });
  const phases: Array<{ name: string; edge: Edge; source: RequestSource }> = [
    { name: 'floor (nginx return 404, no Lua)', edge: full, source: fixed('POST', '/metrics') },
    { name: 'refusal (sold out, at the edge)', edge: full, source: fixed('POST', soldOutPath) },
    { name: 'l1 (GET /api/shop/{id})', edge: full, source: fixed('GET', `/api/shop/${world.shopId}`, {}) },
    { name: 'order-proxy (Lua off)', edge: plain, source: new Sale(await orderVouchers(40), world.users) },
    { name: 'order-reads (sales off)', edge: readsOnly, source: new Sale(await orderVouchers(40), world.users) },
    { name: 'order-edge (everything on)', edge: full, source: new Sale(await orderVouchers(40), world.users) },
  ];
  const serverPid = server.child.pid!;
  const redis = (await redisPid(world.redis))!;
  const results = new Map<string, Array<{ rps: number; nginx: number; app: number; redis: number }>>();
  // Each phase's rate from its previous round (the first round, a short warm-up, from a guess): the closed loop runs a number of requests.
  const rates = new Map<string, number>();
  for (let round = 0; round < ROUNDS + 1; round++) {
    for (const phase of phases) {
      const nginxPids = [phase.edge.pid, ...childPids(phase.edge.pid)];
      const nginxMicros = () => nginxPids.reduce((sum, pid) => sum + processCpuMicros(pid), 0);
      const perf =
        process.env.PERF === '1' && round === ROUNDS && phase.edge === full && !phase.name.startsWith('l1')
          ? await startPerf(nginxPids.slice(1), phase.name)
          : undefined;
      const before = { nginx: nginxMicros(), app: processCpuMicros(serverPid), redis: processCpuMicros(redis) };
      const measured = await saturate(phase.edge.url, phase.source, {
        connections: CONNECTIONS,
        durationSeconds: round === 0 ? 1 : SECONDS,
        expectedRps: rates.get(phase.name) ?? 5_000,
      });
      rates.set(phase.name, measured.rps);
      const per = (now: number, then: number) => (now - then) / measured.requests;
      await perf?.();
      if (measured.non2xx > 0 && !phase.name.startsWith('floor')) console.error(`${phase.name}: ${measured.non2xx} answers outside 2xx`);
      if (round === 0) continue; // warm-up
      const row = {
        rps: measured.rps,
        nginx: per(nginxMicros(), before.nginx),
        app: per(processCpuMicros(serverPid), before.app),
        redis: per(processCpuMicros(redis), before.redis),
      };
      results.set(phase.name, [...(results.get(phase.name) ?? []), row]);
    }
  }
  console.log(`${ROUNDS} rounds of ${SECONDS} s per phase, ${CONNECTIONS} connections; µs of CPU per request, each round's figure:`);
  for (const [name, rows] of results) {
    const f = (pick: (row: (typeof rows)[number]) => number) => rows.map((row) => pick(row).toFixed(1)).join(' / ');
    console.log(
      `  ${name.padEnd(34)} req/s ${rows.map((row) => row.rps).join(' / ')} | nginx ${f((row) => row.nginx)} | app ${f((row) => row.app)} | Redis ${f((row) => row.redis)}`,
    );
  }
} finally {
  for (const edge of edges) await edge.stop();
  await server.stop();
  await world.destroy();
  await redisServer.kill();
}

/** `perf record -g` of the worker(s) until the returned function is called; then the top of its report. */
async function startPerf(pids: number[], name: string): Promise<() => Promise<void>> {
  const file = join(tmpdir(), `hmdp-edge-sale-${process.pid}-${name.replace(/\W+/g, '-')}.perf`);
  const perf = spawn('perf', ['record', '-F', '4999', '-g', '-o', file, '-p', pids.join(',')], { stdio: 'ignore' });
  // perf needs a moment to attach; a SIGINT before that ends it without a file.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  return async () => {
    perf.kill('SIGINT');
    await new Promise((resolve) => perf.once('exit', resolve));
    const report = execFileSync('perf', ['report', '-i', file, '--stdio', '--no-children', '--sort', 'dso,symbol', '-g', 'none', '--percent-limit', '1.5'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    console.log(
      `\nperf, ${name}, the worker's samples by library and symbol:\n${report
        .split('\n')
        .filter((line) => line.trim() && !line.startsWith('#'))
        .join('\n')}`,
    );
  };
}
