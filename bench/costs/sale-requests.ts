/**
 * What each request of a flash sale costs each process: `npx tsx bench/costs/sale-requests.ts`.
 * docs/sizing.md projects the cores a sale needs per tier from these figures.
 *
 * A private redis-server (so its CPU is this run's alone), an app server (async strategy, its
 * order worker on) on it and on a database of its own in the machine's MariaDB. Two slices of
 * REQUESTS order requests, IN_FLIGHT at a time, each from a buyer not seen before (so each pays
 * the session lookup in Redis, as a buyer does on an instance that has not served them yet):
 *
 * - accepted: one voucher of REQUESTS units, every request accepted; the slice ends when the
 *   worker has written every order to MySQL (group commit), so the writes are in it;
 * - refused: REQUESTS more on the sold-out voucher, every one refused from the instance's
 *   sold-out memory (`seckill_requests_total{outcome="sold-out-known"}`; the first ones, sent
 *   before the instance has read the sale's hash, by reserve.lua).
 *
 * Each process's CPU is utime + stime of /proc/<pid>/stat over the slice, per request. MariaDB is
 * the machine's: other clients' work lands in its figure.
 */
import { Pool } from 'undici';
import { startRedisServer } from '../../kit/redis-servers.js';
import { createOwnWorld, loadAverage, mariadbPid, parseCounter, processCpuMicros, redisPid, scrapeMetrics, startServer } from '../harness/index.js';
import { orderBody, waitForDrain } from '../sale/index.js';

const REQUESTS = Number(process.env.REQUESTS ?? 20_000);
const IN_FLIGHT = Number(process.env.IN_FLIGHT ?? 100);
const DRAIN_TIMEOUT_MS = 60_000;

const redisServer = await startRedisServer();
const world = await createOwnWorld({
  redisUrl: redisServer.url,
  mysqlServerUrl: (process.env.MYSQL_SERVER_URL ?? 'mysql://root@127.0.0.1:3306').replace(/\/$/, ''),
  users: 2 * REQUESTS,
  name: `hmdp_bench_salereq_${process.pid}`,
});
const server = await startServer({ env: { ...world.env, SECKILL_STRATEGY: 'async', SECKILL_WORKER: 'true', SECKILL_CONSUMER: 'bench-sale-requests' } });
const pool = new Pool(server.url, { connections: IN_FLIGHT });
try {
  const pids = { server: server.child.pid!, redis: (await redisPid(world.redis))!, mariadb: await mariadbPid(world.db) };
  const [voucherId] = await world.createVouchers(1, REQUESTS);
  const order = (userIndex: number): Promise<string> => orderBody(pool, voucherId!, world.users[userIndex]!.token);
  console.log(`load average before: ${await loadAverage()}`);

  const accepted = await slice(pids, async () => {
    const bodies = await sendAll(order, 0, REQUESTS);
    const successes = bodies.filter((body) => body.startsWith('{"success":true')).length;
    if (successes !== REQUESTS) throw new Error(`${successes} of ${REQUESTS} orders accepted: not the slice this measures`);
    if (!(await waitForDrain(world, DRAIN_TIMEOUT_MS))) throw new Error('the worker did not write every order in time');
  });
  const knownBefore = await soldOutKnown();
  const refused = await slice(pids, () => sendAll(order, REQUESTS, 2 * REQUESTS));
  const refusedFromMemory = (await soldOutKnown()) - knownBefore;
  // The first IN_FLIGHT or so are refused by reserve.lua, before the instance has read the sale's hash.
  if (refusedFromMemory < 0.99 * REQUESTS) throw new Error(`${refusedFromMemory} of ${REQUESTS} refused from memory: not the slice this measures`);

  console.log(`${REQUESTS} requests per slice, ${IN_FLIGHT} in flight; CPU µs per request (req/s over the slice)`);
  console.log(`accepted, written to MySQL: ${describe(accepted)}`);
  console.log(`refused, sold out (${refusedFromMemory} of them from memory): ${describe(refused)}`);
  console.log(`load average after: ${await loadAverage()}`);
} finally {
  await pool.close();
  await server.stop();
  await world.destroy();
  await redisServer.kill();
}

/** Sends the orders of buyers first..last−1, IN_FLIGHT at a time; their bodies. */
async function sendAll(order: (userIndex: number) => Promise<string>, first: number, last: number): Promise<string[]> {
  const bodies: string[] = [];
  let next = first;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < last) bodies.push(await order(next++));
    }),
  );
  return bodies;
}

interface SliceCost {
  server: number;
  redis: number;
  mariadb: number;
  perSecond: number;
}

/** Each process's CPU µs per request while `work` sends REQUESTS requests. */
async function slice(pids: { server: number; redis: number; mariadb: number | undefined }, work: () => Promise<unknown>): Promise<SliceCost> {
  const cpu = () => ({
    server: processCpuMicros(pids.server),
    redis: processCpuMicros(pids.redis),
    mariadb: pids.mariadb === undefined ? Number.NaN : processCpuMicros(pids.mariadb),
  });
  const before = cpu();
  const started = performance.now();
  await work();
  const seconds = (performance.now() - started) / 1000;
  const after = cpu();
  return {
    server: (after.server - before.server) / REQUESTS,
    redis: (after.redis - before.redis) / REQUESTS,
    mariadb: (after.mariadb - before.mariadb) / REQUESTS,
    perSecond: REQUESTS / seconds,
  };
}

function describe(cost: SliceCost): string {
  return `server ${cost.server.toFixed(1)}, Redis ${cost.redis.toFixed(1)}, MariaDB ${cost.mariadb.toFixed(1)} (${Math.round(cost.perSecond)} req/s)`;
}

async function soldOutKnown(): Promise<number> {
  return parseCounter(await (await scrapeMetrics(server.url)).text(), 'seckill_requests_total', 'outcome="sold-out-known"') ?? 0;
}
