/**
 * How long after a change in Redis the edge may still refuse on its old view of a sale (issue 41's
 * bound, aim ≤ 50 ms p99): `npx tsx bench/costs/edge-sale-window.ts` (ROUNDS, default 200;
 * WORKERS, default 2; CONNECTIONS, default 8).
 *
 * Starts a private redis-server, one app server and the edge (WORKERS nginx workers) in front, and
 * a sale of one unit, bought. Each round: the edge refuses the buyer's next order "Sold out" on
 * every one of CONNECTIONS keep-alive connections (nginx spreads them over its workers); one unit
 * comes back in Redis (HINCRBY of the sale's stock, straight to Redis: the change itself); from the
 * moment it is sent, each connection sends orders back to back until one is passed to the app
 * (which answers "already bought": nothing is sold); then the unit is taken back. The window of a
 * round is the slowest connection's time, one order's round trip included.
 */
import { Pool } from 'undici';
import { startEdge } from '../../kit/edge.js';
import { startRedisServer } from '../../kit/redis-servers.js';
import { loadConfig } from '../../src/infra/config.js';
import { SaleKeys } from '../../src/modules/seckill/index.js';
import { SessionStore } from '../../src/modules/users/index.js';
import { createOwnWorld, startServer } from '../harness/index.js';

const ROUNDS = Number(process.env.ROUNDS ?? 200);
const WORKERS = Number(process.env.WORKERS ?? 2);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 8);

const redisServer = await startRedisServer();
const world = await createOwnWorld({
  redisUrl: redisServer.url,
  mysqlServerUrl: (process.env.MYSQL_SERVER_URL ?? 'mysql://root@127.0.0.1:3306').replace(/\/$/, ''),
  users: 10,
  name: `hmdp_bench_edge_window_${process.pid}`,
});
const env = { ...world.env, SECKILL_WORKER: 'true', TRUST_PROXY: '1' };
const server = await startServer({ env });
const edge = await startEdge(loadConfig(env), { salePool: [server.url.replace('http://', '')], workers: WORKERS });
const pools = Array.from({ length: CONNECTIONS }, () => new Pool(edge.url, { connections: 1, pipelining: 1 }));
try {
  const admin = await new SessionStore(world.redis, 3600).create({ id: world.users.at(-1)!.id, nickName: 'bench admin', icon: '', role: 'admin' });
  const buyer = world.users[0]!.token;
  const voucherId = await createSale(server.url, admin);
  const bought = (await (
    await fetch(`${server.url}/api/voucher-order/seckill/${voucherId}`, { method: 'POST', headers: { authorization: buyer } })
  ).json()) as {
    success: boolean;
  };
  if (!bought.success) throw new Error('edge-sale-window: the one unit was not sold');
  const saleKey = new SaleKeys(loadConfig(env).seckill.streamShards).voucher(voucherId).voucher;

  /** Whether the edge answered this connection's order itself (no X-Upstream). */
  const refusedAtEdge = async (pool: Pool): Promise<boolean> => {
    const { headers, body } = await pool.request({ method: 'POST', path: `/api/voucher-order/seckill/${voucherId}`, headers: { authorization: buyer } });
    await body.text();
    return headers['x-upstream'] === undefined;
  };

  const windows: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    await Promise.all(pools.map(async (pool) => await until(() => refusedAtEdge(pool), true)));
    const changedAt = performance.now();
    await world.redis.hincrby(saleKey, 'stock', 1);
    const seen = await Promise.all(
      pools.map(async (pool) => {
        await until(() => refusedAtEdge(pool), false);
        return performance.now() - changedAt;
      }),
    );
    windows.push(Math.max(...seen));
    await world.redis.hincrby(saleKey, 'stock', -1);
  }
  const sorted = [...windows].sort((x, y) => x - y);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2);
  console.log(
    `${ROUNDS} rounds, ${WORKERS} nginx workers, ${CONNECTIONS} connections: from a unit put back in Redis to the last connection's order passed to the app`,
  );
  console.log(`  ms: p50 ${at(0.5)}, p90 ${at(0.9)}, p99 ${at(0.99)}, max ${sorted.at(-1)!.toFixed(2)}`);
} finally {
  for (const pool of pools) await pool.close();
  await edge.stop();
  await server.stop();
  await world.destroy();
  await redisServer.kill();
}

/** Calls `check` until it gives `wanted` (at most 100,000 times). */
async function until(check: () => Promise<boolean>, wanted: boolean): Promise<void> {
  for (let tries = 0; tries < 100_000; tries += 1) if ((await check()) === wanted) return;
  throw new Error(`edge-sale-window: never ${wanted ? 'refused at the edge' : 'passed to the app'}`);
}

async function createSale(url: string, admin: string): Promise<string> {
  const body = {
    shopId: world.shopId,
    title: 'edge window',
    payValue: 100,
    actualValue: 200,
    stock: 1,
    beginTime: new Date(Date.now() - 60_000).toISOString(),
    endTime: new Date(Date.now() + 3_600_000).toISOString(),
  };
  const response = await fetch(`${url}/api/voucher/seckill`, {
    method: 'POST',
    headers: { authorization: admin, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const answer = (await response.json()) as { success: boolean; data?: string; errorMsg?: string };
  if (!answer.success || answer.data === undefined) throw new Error(`edge-sale-window: the sale was not created: ${answer.errorMsg ?? ''}`);
  return answer.data;
}
