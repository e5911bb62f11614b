/**
 * What an order request costs Redis once its voucher is sold out: `npx tsx bench/costs/sold-out.ts`.
 *
 * Starts a private redis-server (so its statistics hold only this run), an app server (async
 * strategy, worker on) on it and on a database of its own, sells a voucher out, then sends
 * REQUESTS more order requests from fresh buyers. Over that slice it counts every Redis command
 * two ways: INFO commandstats by command, and MONITOR by the key each command touches (a
 * command's family: `login:token` is the session, `{seckill:N}:voucher` the sale, ...), minus
 * what an idle slice as long sends (the worker's XREADGROUP, the release queue's polling, the
 * sold-out flag's check). Next to them: `seckill_requests_total{outcome="sold-out-known"}`,
 * the requests the instance refused from memory.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { Pool } from 'undici';
import { startRedisServer } from '../../kit/redis-servers.js';
import { createOwnWorld, parseCounter, scrapeMetrics, startServer } from '../harness/index.js';
import { orderBody } from '../sale/index.js';

const STOCK = 10;
const REQUESTS = Number(process.env.REQUESTS ?? 5_000);
const CONCURRENCY = 50;

const redisServer = await startRedisServer();
const world = await createOwnWorld({
  redisUrl: redisServer.url,
  mysqlServerUrl: (process.env.MYSQL_SERVER_URL ?? 'mysql://root@127.0.0.1:3306').replace(/\/$/, ''),
  users: REQUESTS + 100,
  name: `hmdp_bench_soldout_${process.pid}`,
});
const server = await startServer({ env: { ...world.env, SECKILL_STRATEGY: 'async', SECKILL_WORKER: 'true', SECKILL_CONSUMER: 'bench-sold-out' } });
const raw = new Redis(redisServer.url);
const pool = new Pool(server.url, { connections: CONCURRENCY });
try {
  const [voucherId] = await world.createVouchers(1, STOCK);
  const order = (userIndex: number): Promise<string> => orderBody(pool, voucherId!, world.users[userIndex]!.token);
  // The sale: 100 buyers for 10 units; the first "sold out" answer from Redis sets the flag.
  const first = await Promise.all(Array.from({ length: 100 }, (_, i) => order(i)));
  const accepted = first.filter((body) => body.startsWith('{"success":true')).length;
  await sleep(1_000); // the worker writes the 10 orders; the flag is set

  const refusedBefore = await soldOutKnown();
  const load = await slice(async () => {
    let next = 100;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < 100 + REQUESTS) await order(next++);
      }),
    );
  });
  const sliceMs = load.ms;
  const refusedFromMemory = (await soldOutKnown()) - refusedBefore;
  const idle = await slice(() => sleep(sliceMs));
  const idleScale = sliceMs / idle.ms;

  console.log(`sale: stock ${STOCK}, ${accepted} of the first 100 requests accepted; then ${REQUESTS} requests in ${Math.round(sliceMs)} ms`);
  console.log(`refused from memory (seckill_requests_total{outcome="sold-out-known"}): ${refusedFromMemory} of ${REQUESTS}`);
  console.log(`\nINFO commandstats (commands run inside scripts included): calls in the slice | per request | calls in an idle slice as long`);
  print(load.commands, idle.commands, idleScale);
  console.log(`\nMONITOR, commands sent by clients (not from inside a script), by key family: calls in the slice | per request | idle`);
  print(load.families, idle.families, idleScale);
} finally {
  await pool.close();
  raw.disconnect();
  await server.stop();
  await world.destroy();
  await redisServer.kill();
}

/** Redis' command counts and MONITOR's key families while `work` runs. */
async function slice(work: () => Promise<unknown>): Promise<{ ms: number; commands: Map<string, number>; families: Map<string, number> }> {
  const families = new Map<string, number>();
  const monitor = await raw.monitor();
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === 'lua') return;
    const family = familyOf(args);
    families.set(family, (families.get(family) ?? 0) + 1);
  });
  await raw.config('RESETSTAT');
  const started = performance.now();
  await work();
  const ms = performance.now() - started;
  const stats = await raw.info('commandstats');
  monitor.disconnect();
  const commands = new Map<string, number>();
  for (const [, command, calls] of stats.matchAll(/cmdstat_([\w|]+):calls=(\d+)/g)) {
    if (!['info', 'config', 'monitor'].includes(command!)) commands.set(command!, Number(calls));
  }
  return { ms, commands, families };
}

/** One line per command or family, busiest first: its calls, per request, and the idle slice's (scaled to the slice's length). */
function print(load: Map<string, number>, idle: Map<string, number>, idleScale: number): void {
  const names = [...new Set([...load.keys(), ...idle.keys()])].sort((a, b) => (load.get(b) ?? 0) - (load.get(a) ?? 0));
  for (const name of names) {
    const calls = load.get(name) ?? 0;
    console.log(`  ${name.padEnd(34)} ${String(calls).padStart(6)} | ${(calls / REQUESTS).toFixed(3)} | ${Math.round((idle.get(name) ?? 0) * idleScale)}`);
  }
}

/** `EVALSHA sha 2 {seckill:1}:voucher:7 ...` → `evalsha {seckill:N}:voucher`; the prefix and ids dropped. */
function familyOf(args: string[]): string {
  const [command = '', ...rest] = args;
  const name = command.toLowerCase();
  const key = name === 'evalsha' || name === 'eval' ? rest[2] : name === 'xreadgroup' ? rest[rest.indexOf('STREAMS') + 1] : rest[0];
  if (key === undefined) return name;
  const family = key
    .replace(/^hmdp_bench_soldout_\d+:/, '')
    .replace(/\{seckill:\d+\}/, '{seckill:N}')
    .split(':')
    .filter((part) => !/^[\da-f]{16,}$|^\d+$/.test(part))
    .join(':');
  return `${name} ${family}`;
}

async function soldOutKnown(): Promise<number> {
  return parseCounter(await (await scrapeMetrics(server.url)).text(), 'seckill_requests_total', 'outcome="sold-out-known"') ?? 0;
}
