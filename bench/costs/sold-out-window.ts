/**
 * How long an instance may still answer "Sold out" from memory after units came back on another:
 * `npx tsx bench/costs/sold-out-window.ts` (ROUNDS, default 50; BUCKETS, default 1).
 *
 * Starts a private redis-server, two app servers A and B on it (async strategy, worker on) and
 * one sale. Each round: B sells the voucher out and answers it from memory; A raises the stock by
 * one unit (PATCH); from A's answer on, B is sent one order at a time until it accepts one. The
 * window is the time from A's answer to B's first answer that is not "Sold out", one order's round
 * trip included; the orders B refused in it are counted.
 */
import { Pool } from 'undici';
import { startRedisServer } from '../../kit/redis-servers.js';
import { SessionStore } from '../../src/modules/users/index.js';
import { createOwnWorld, parseCounter, scrapeMetrics, startServer, type ServerProcess } from '../harness/index.js';

const ROUNDS = Number(process.env.ROUNDS ?? 50);
const BUCKETS = Number(process.env.BUCKETS ?? 1);
const SOLD_OUT = 'Sold out';

const redisServer = await startRedisServer();
const world = await createOwnWorld({
  redisUrl: redisServer.url,
  mysqlServerUrl: (process.env.MYSQL_SERVER_URL ?? 'mysql://root@127.0.0.1:3306').replace(/\/$/, ''),
  users: ROUNDS * 4 + 200,
  name: `hmdp_bench_window_${process.pid}`,
});
const env = { ...world.env, SECKILL_STRATEGY: 'async', SECKILL_WORKER: 'true', SECKILL_MAX_BUCKETS: '8' };
const servers: ServerProcess[] = [];
try {
  servers.push(await startServer({ env: { ...env, SECKILL_CONSUMER: 'window-a' } }));
  servers.push(await startServer({ env: { ...env, SECKILL_CONSUMER: 'window-b' } }));
  const [a, b] = servers as [ServerProcess, ServerProcess];
  const admin = await new SessionStore(world.redis, 3600).create({ id: world.users.at(-1)!.id, nickName: 'bench admin', icon: '', role: 'admin' });
  const toB = new Pool(b.url, { connections: 1 });
  let nextBuyer = 0;
  // A refused buyer has bought nothing: the same one is sent again until B accepts.
  const orderOnB = async (): Promise<string> => {
    const { body } = await toB.request({
      method: 'POST',
      path: `/api/voucher-order/seckill/${voucherId}`,
      headers: { authorization: world.users[nextBuyer]!.token },
    });
    const answer = (await body.json()) as { success: boolean; errorMsg?: string };
    if (answer.success) nextBuyer += 1;
    return answer.success ? 'accepted' : (answer.errorMsg ?? 'refused');
  };
  let stock = 2;
  const voucherId = await createSale(a.url, admin, stock);

  const windows: number[] = [];
  const refusedInWindow: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    await soldOutKnownOn(b, orderOnB);
    stock += 1;
    await patch(a.url, admin, voucherId, { stock });
    const raisedAt = performance.now();
    let refused = 0;
    for (;;) {
      const answer = await orderOnB();
      if (answer !== SOLD_OUT) break;
      refused += 1;
    }
    windows.push(performance.now() - raisedAt);
    refusedInWindow.push(refused);
  }
  await toB.close();
  const sorted = [...windows].sort((x, y) => x - y);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2);
  console.log(`buckets ${BUCKETS}, ${ROUNDS} rounds: from A's raise answered to B's first order not refused "Sold out" (one order's round trip included)`);
  console.log(`  ms: p50 ${at(0.5)}, p90 ${at(0.9)}, p99 ${at(0.99)}, max ${sorted.at(-1)!.toFixed(2)}`);
  console.log(
    `  orders B refused "Sold out" after the raise: ${refusedInWindow.reduce((s, n) => s + n, 0)} in all, at most ${Math.max(...refusedInWindow)} in a round`,
  );
} finally {
  for (const server of servers) await server.stop();
  await world.destroy();
  await redisServer.kill();
}

async function createSale(url: string, admin: string, stock: number): Promise<string> {
  const begin = new Date(Date.now() - 60_000).toISOString();
  const end = new Date(Date.now() + 3_600_000).toISOString();
  const body = { shopId: world.shopId, title: 'window', payValue: 100, actualValue: 200, stock, buckets: BUCKETS, beginTime: begin, endTime: end };
  const answer = (await (await fetch(`${url}/api/voucher/seckill`, { method: 'POST', headers: json(admin), body: JSON.stringify(body) })).json()) as {
    success: boolean;
    data?: string;
    errorMsg?: string;
  };
  if (!answer.success || answer.data === undefined) throw new Error(`sold-out-window: the sale was not created: ${answer.errorMsg ?? ''}`);
  return answer.data;
}

async function patch(url: string, admin: string, voucherId: string, body: object): Promise<void> {
  const response = await fetch(`${url}/api/voucher/seckill/${voucherId}`, { method: 'PATCH', headers: json(admin), body: JSON.stringify(body) });
  if (!response.ok) throw new Error(`sold-out-window: PATCH answered ${response.status} ${await response.text()}`);
}

function json(token: string) {
  return { authorization: token, 'content-type': 'application/json' };
}

/** Orders on `server` until it has refused one from memory (its sold-out-known count rose). */
async function soldOutKnownOn(server: ServerProcess, order: () => Promise<string>): Promise<void> {
  const before = await knownRefusals(server);
  for (let tries = 0; tries < 1_000; tries += 1) {
    await order();
    if ((await knownRefusals(server)) > before) return;
  }
  throw new Error('sold-out-window: the instance never answered "Sold out" from memory');
}

async function knownRefusals(server: ServerProcess): Promise<number> {
  return parseCounter(await (await scrapeMetrics(server.url)).text(), 'seckill_requests_total', 'outcome="sold-out-known"') ?? 0;
}
