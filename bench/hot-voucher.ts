/**
 * `npm run bench -- hot-voucher`: what one Redis core sustains of reserve.lua on a single voucher
 * (docs/bench-hot-voucher.md). Every order of one voucher runs on the one core of the one Redis
 * (Cluster slot) that holds its stock: this is the ceiling of a single sale, however many app
 * instances stand in front.
 *
 * A redis-server of its own on a free port (stopped by pid at the end); the driver is this
 * process, through the app's ReserveBatches over several auto-pipelined ioredis connections. Two
 * cases: `accepting` (stock left: every order takes a unit, marks the buyer and appends to the
 * stream) and `sold out` (the script refuses after reading the stock), each decided one order per
 * script run and in batches (the app's default cap), side by side. Redis CPU per order is
 * /proc/<pid>/stat over the case divided by the orders; the script's wall time is Redis' own count
 * (INFO commandstats), which on a busy machine includes time Redis was descheduled.
 *
 * Then one voucher sold out from B = 1, 2, 3 buckets on a Redis Cluster (hot-voucher-buckets.ts):
 * CPU per order on each master, the projected ceiling, refills, the last 1 % and the sale checks.
 */
import { parseArgs } from 'node:util';
import { readFile } from 'node:fs/promises';
import { closeRedis, createRedis, type RedisClient } from '../src/infra/redis.js';
import { buildSale, SaleKeys } from '../src/modules/seckill/index.js';
import { loadConfig } from '../src/infra/config.js';
import { startRedisServer } from '../kit/redis-servers.js';
import { processCpuMicros, redisPid } from './cpu.js';
import { measureBucketed, renderBucketed, type BucketedRow } from './hot-voucher-buckets.js';

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

const USAGE = `npm run bench -- hot-voucher [--seconds S] [--connections N] [--in-flight N] [--stock N] [--buckets LIST] [--buckets-only] [--smoke] [--json]

  --seconds S        each one-core case (default 8)
  --connections N    ioredis connections of the driver (default 4)
  --in-flight N      orders awaiting an answer at once: one-core cases, over all connections; bucketed sales, per bucket (default 256)
  --stock N          units of each bucketed sale (default 200000)
  --buckets LIST     the B of the bucketed sales, on a Redis Cluster of 3 masters + 3 replicas (default 1,2,3)
  --buckets-only     only the bucketed sales (not the one-core cases)
  --smoke            seconds in all, small numbers (the tests): --seconds 0.3 --stock 3000 --in-flight 64

Each one-core case runs one order per script run, then batched (at most SECKILL_RESERVE_BATCH_MAX orders a run, the app's setting);
the bucketed sales are batched. Exit code 1 when a bucketed sale fails a check, 2 on bad options.`;

export interface HotVoucherReport {
  command: string;
  loadAverage: string;
  /** One Redis core, B = 1: the cases of measureHotVoucher. */
  rows: HotVoucherRow[];
  /** One voucher from B buckets on a Redis Cluster (hot-voucher-buckets.ts). */
  bucketed: BucketedRow[];
  pass: boolean;
}

export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        seconds: { type: 'string' },
        connections: { type: 'string', default: '4' },
        'in-flight': { type: 'string' },
        stock: { type: 'string' },
        buckets: { type: 'string', default: '1,2,3' },
        'buckets-only': { type: 'boolean', default: false },
        smoke: { type: 'boolean', default: false },
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
  const smoke = values.smoke;
  const seconds = Number(values.seconds ?? (smoke ? '0.3' : '8'));
  const connections = Number(values.connections);
  const inFlight = Number(values['in-flight'] ?? (smoke ? '64' : '256'));
  const stock = Number(values.stock ?? (smoke ? '3000' : '200000'));
  const buckets = values.buckets.split(',').map(Number);
  const goodBuckets = buckets.length > 0 && buckets.every((b) => Number.isInteger(b) && b >= 1 && b <= 3);
  if (!(seconds > 0) || !(connections >= 1) || !(inFlight >= connections) || !(Number.isInteger(stock) && stock >= 100) || !goodBuckets) {
    console.error(`bench hot-voucher: bad option (buckets: 1 to 3, as many as the Cluster's masters; stock: 100 or more)\n\n${USAGE}`);
    return 2;
  }
  const report = await runHotVoucher(
    { seconds, connections, inFlight, stock, buckets, oneCore: !values['buckets-only'] },
    ['npm run bench -- hot-voucher', ...argv].join(' '),
  );
  console.log(values.json ? JSON.stringify(report, null, 2) : renderReport(report));
  if (!report.pass) console.error('bench hot-voucher: a sale check FAILED (see the checks above)');
  return report.pass ? 0 : 1;
}

export async function runHotVoucher(
  options: { seconds: number; connections: number; inFlight: number; stock: number; buckets: number[]; oneCore: boolean },
  command: string,
): Promise<HotVoucherReport> {
  const load = async () => (await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ');
  const before = await load();
  const rows = options.oneCore ? await measureHotVoucher(options) : [];
  const bucketed = await measureBucketed({ ...options, batchMax: loadConfig().seckill.reserveBatchMax });
  return { command, loadAverage: `${before} → ${await load()}`, rows, bucketed, pass: bucketed.every((row) => row.pass) };
}

function renderReport(report: HotVoucherReport): string {
  return [
    `\`${report.command}\`; load average ${report.loadAverage} (1, 5, 15 min; start → end).`,
    ...(report.rows.length > 0 ? ['', '### One Redis core (B = 1, a redis-server of its own)', '', renderHotVoucher(report.rows)] : []),
    '',
    '### One voucher from B buckets (Redis Cluster, 3 masters + 3 replicas, batched)',
    '',
    renderBucketed(report.bucketed),
  ].join('\n');
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
  const stores = clients.map((client) => buildSale(client, keys, { maxBatch: batchCap }));
  const voucherId = '4242';
  const begin = new Date(Date.now() - 60_000);
  await stores[0]!.publisher.publish({ voucherId, stock: which === 'accepting' ? 100_000_000 : 0, begin, end: new Date(begin.getTime() + 6 * 3600_000) });
  let next = 0;
  const drive = async (until: number) => {
    const loops = Array.from({ length: options.inFlight }, async (_, loop) => {
      const sale = stores[loop % stores.length]!;
      while (performance.now() < until) {
        const k = next++;
        const { outcome } = await sale.batches.reserve({ orderId: String(7_000_000_000_000_000_000n + BigInt(k)), userId: String(1_000 + k), voucherId });
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

export function renderHotVoucher(rows: HotVoucherRow[]): string {
  const n = (value: number) => value.toLocaleString('en-US');
  const decided = (row: HotVoucherRow) => (row.batchCap === 1 ? 'one at a time' : `batched (≤ ${row.batchCap})`);
  return [
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
