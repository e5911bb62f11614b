/**
 * `npm run bench -- hot-voucher`: what one Redis core sustains of reserve.lua on a single voucher
 * (docs/bench-hot-voucher.md). Every order of one voucher runs on the one core of the one Redis
 * (Cluster slot) that holds its stock: this is the ceiling of a single sale, however many app
 * instances stand in front.
 *
 * A redis-server of its own on a free port (stopped by pid at the end); the driver is this
 * process, through the app's SaleStore over several auto-pipelined ioredis connections. Two
 * cases: `accepting` (stock left: every order takes a unit, marks the buyer and appends to the
 * stream) and `sold out` (the script refuses after reading the stock), each decided one order per
 * script run and in batches (the app's default cap), side by side. Redis CPU per order is
 * /proc/<pid>/stat over the case divided by the orders; the script's wall time is Redis' own count
 * (INFO commandstats), which on a busy machine includes time Redis was descheduled.
 */
import { parseArgs } from 'node:util';
import { readFile } from 'node:fs/promises';
import { closeRedis, createRedis, type RedisClient } from '../src/infra/redis.js';
import { SaleKeys, SaleStore } from '../src/modules/seckill/index.js';
import { loadConfig } from '../src/infra/config.js';
import { startRedisServer } from '../kit/redis-servers.js';
import { processCpuMicros, redisPid } from './cpu.js';

export interface HotVoucherRow {
  case: 'accepting' | 'sold out';
  /** Orders one script run decides at most: 1 (one at a time) or the app's cap (batched). */
  batchCap: number;
  orders: number;
  seconds: number;
  ordersPerSecond: number;
  /** Orders per script run (INFO commandstats, evalsha). */
  ordersPerScriptRun: number;
  /** Redis CPU per order, µs (/proc). */
  redisMicrosPerOrder: number;
  /** Of one core, over the run. */
  redisCpuShare: number;
  /** Time inside the script per order, µs (INFO commandstats, evalsha). */
  scriptMicrosPerOrder: number;
  /** 1 s of one core divided by the Redis CPU per order: the ceiling when Redis alone is busy. */
  oneCoreCeiling: number;
  driverMicrosPerOrder: number;
  /** The commands the script ran, per order (INFO commandstats counts them beside the EVALSHA): where its time goes. */
  commandsPerOrder: Array<{ command: string; calls: number; micros: number }>;
}

const USAGE = `npm run bench -- hot-voucher [--seconds S] [--connections N] [--in-flight N] [--json]

  --seconds S        each case (default 8)
  --connections N    ioredis connections of the driver (default 4)
  --in-flight N      orders awaiting an answer at once, over all connections (default 256)

Each case runs one order per script run, then batched (at most SECKILL_RESERVE_BATCH_MAX orders a run, the app's setting).`;

export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        seconds: { type: 'string', default: '8' },
        connections: { type: 'string', default: '4' },
        'in-flight': { type: 'string', default: '256' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
      strict: true,
    });
  } catch (error) {
    console.error(`bench hot-voucher: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { values } = parsed;
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const seconds = Number(values.seconds);
  const connections = Number(values.connections);
  const inFlight = Number(values['in-flight']);
  if (!(seconds > 0) || !(connections >= 1) || !(inFlight >= connections)) {
    console.error(`bench hot-voucher: bad option\n\n${USAGE}`);
    return 2;
  }
  const load = async () => (await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ');
  const before = await load();
  const rows = await measureHotVoucher({ seconds, connections, inFlight });
  const command = ['npm run bench -- hot-voucher', ...argv].join(' ');
  if (values.json) console.log(JSON.stringify({ command, loadAverage: `${before} → ${await load()}`, rows }, null, 2));
  else console.log(renderHotVoucher(rows, command, `${before} → ${await load()}`));
  return 0;
}

export async function measureHotVoucher(options: { seconds: number; connections: number; inFlight: number }): Promise<HotVoucherRow[]> {
  const server = await startRedisServer();
  const clients = Array.from({ length: options.connections }, () => createRedis({ redisUrl: server.url, redisClusterNodes: [], redisKeyPrefix: '' }));
  const batchCaps = [1, loadConfig().seckill.reserveBatchMax];
  try {
    const pid = (await redisPid(clients[0]!))!;
    const rows: HotVoucherRow[] = [];
    for (const which of ['accepting', 'sold out'] as const) {
      for (const batchCap of batchCaps) {
        await clients[0]!.flushall();
        rows.push(await oneCase(which, batchCap, clients, pid, options));
      }
    }
    return rows;
  } finally {
    await Promise.all(clients.map((client) => closeRedis(client)));
    await server.kill();
  }
}

async function oneCase(
  which: HotVoucherRow['case'],
  batchCap: number,
  clients: RedisClient[],
  pid: number,
  options: { seconds: number; inFlight: number },
): Promise<HotVoucherRow> {
  const keys = new SaleKeys(4);
  const stores = clients.map((client) => new SaleStore(client, keys, { maxBatch: batchCap }));
  const voucherId = '4242';
  const begin = new Date(Date.now() - 60_000);
  await stores[0]!.publish({ voucherId, stock: which === 'accepting' ? 100_000_000 : 0, begin, end: new Date(begin.getTime() + 6 * 3600_000) });
  let next = 0;
  const drive = async (until: number) => {
    const loops = Array.from({ length: options.inFlight }, async (_, loop) => {
      const store = stores[loop % stores.length]!;
      while (performance.now() < until) {
        const k = next++;
        const { outcome } = await store.reserve({ orderId: String(7_000_000_000_000_000_000n + BigInt(k)), userId: String(1_000 + k), voucherId });
        if (outcome !== (which === 'accepting' ? 'accepted' : 'sold-out')) throw new Error(`reserve answered ${outcome}`);
      }
    });
    await Promise.all(loops);
  };
  await drive(performance.now() + 1_000); // warm-up: scripts loaded, JIT
  await clients[0]!.config('RESETSTAT');
  const orders0 = next;
  const redis0 = processCpuMicros(pid);
  const driver0 = process.cpuUsage();
  const started = performance.now();
  await drive(started + options.seconds * 1000);
  const seconds = (performance.now() - started) / 1000;
  const orders = next - orders0;
  const redisMicros = processCpuMicros(pid) - redis0;
  const driver = process.cpuUsage(driver0);
  const stats = await clients[0]!.info('commandstats');
  const evalsha = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(stats);
  const redisMicrosPerOrder = redisMicros / orders;
  const round2 = (value: number) => Math.round(value * 100) / 100;
  return {
    case: which,
    batchCap,
    orders,
    seconds: round2(seconds),
    ordersPerSecond: Math.round(orders / seconds),
    ordersPerScriptRun: evalsha ? round2(orders / Number(evalsha[1])) : Number.NaN,
    redisMicrosPerOrder: round2(redisMicrosPerOrder),
    redisCpuShare: round2(redisMicros / 1e6 / seconds),
    scriptMicrosPerOrder: evalsha ? round2(Number(evalsha[2]) / orders) : Number.NaN,
    oneCoreCeiling: Math.round(1e6 / redisMicrosPerOrder),
    driverMicrosPerOrder: round2((driver.user + driver.system) / orders),
    commandsPerOrder: [...stats.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)]
      .filter(([, command = '']) => command !== 'evalsha' && command !== 'info' && !command.startsWith('config'))
      .map(([, command = '', calls, usec]) => ({ command, calls: round2(Number(calls) / orders), micros: round2(Number(usec) / orders) }))
      .sort((a, b) => b.micros - a.micros),
  };
}

export function renderHotVoucher(rows: HotVoucherRow[], command: string, loadAverage: string): string {
  const n = (value: number) => value.toLocaleString('en-US');
  const decided = (row: HotVoucherRow) => (row.batchCap === 1 ? 'one at a time' : `batched (≤ ${row.batchCap})`);
  return [
    `\`${command}\`; load average ${loadAverage} (1, 5, 15 min; start → end).`,
    '',
    "| case | decided | orders/s | orders per script run | Redis CPU µs/order | script wall µs/order (commandstats) | Redis core busy | one core's ceiling, orders/s | driver µs/order |",
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (row) =>
        `| ${row.case} | ${decided(row)} | ${n(row.ordersPerSecond)} | ${row.ordersPerScriptRun} | ${row.redisMicrosPerOrder} | ${row.scriptMicrosPerOrder} | ${Math.round(row.redisCpuShare * 100)} % | ${n(row.oneCoreCeiling)} | ${row.driverMicrosPerOrder} |`,
    ),
    '',
    'Inside the script, per order (commandstats: calls and µs in the command; the rest of the script wall is Lua itself):',
    '',
    ...rows.map(
      (row) =>
        `- ${row.case}, ${decided(row)}: ${row.commandsPerOrder.map((command) => `${command.command} ${command.calls}× ${command.micros} µs`).join(', ')}`,
    ),
  ].join('\n');
}
