/**
 * `npm run bench -- hot-voucher`: what one Redis core sustains of reserve.lua on a single voucher
 * (docs/bench-hot-voucher.md). Every order of one voucher runs on the one core of the one Redis
 * (Cluster slot) that holds its stock: this is the ceiling of a single sale, however many app
 * instances stand in front.
 *
 * A redis-server of its own on a free port (stopped by pid at the end); the driver is this
 * process, through the app's SaleStore over several auto-pipelined ioredis connections. Two
 * cases: `accepting` (stock left: every call takes a unit, marks the buyer and appends to the
 * stream) and `sold out` (the script refuses after reading the stock). Redis CPU per call is
 * /proc/<pid>/stat over the case divided by the calls; the script's wall time per call is Redis'
 * own count (INFO commandstats), which on a busy machine includes time Redis was descheduled.
 */
import { parseArgs } from 'node:util';
import { readFile } from 'node:fs/promises';
import { closeRedis, createRedis, type RedisClient } from '../src/infra/redis.js';
import { SaleKeys, SaleStore } from '../src/modules/seckill/index.js';
import { startRedisServer } from '../kit/redis-servers.js';
import { processCpuMicros, redisPid } from './cpu.js';

export interface HotVoucherRow {
  case: 'accepting' | 'sold out';
  calls: number;
  seconds: number;
  callsPerSecond: number;
  /** Redis CPU per call, µs (/proc). */
  redisMicrosPerCall: number;
  /** Of one core, over the run. */
  redisCpuShare: number;
  /** Time inside the script per call, µs (INFO commandstats, evalsha). */
  scriptMicrosPerCall: number;
  /** 1 s of one core divided by the Redis CPU per call: the ceiling when Redis alone is busy. */
  oneCoreCeiling: number;
  driverMicrosPerCall: number;
}

const USAGE = `npm run bench -- hot-voucher [--seconds S] [--connections N] [--in-flight N] [--json]

  --seconds S        each case (default 8)
  --connections N    ioredis connections of the driver (default 4)
  --in-flight N      calls awaiting an answer at once, over all connections (default 256)`;

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
  try {
    const pid = (await redisPid(clients[0]!))!;
    const rows: HotVoucherRow[] = [];
    for (const which of ['accepting', 'sold out'] as const) {
      await clients[0]!.flushall();
      rows.push(await oneCase(which, clients, pid, options));
    }
    return rows;
  } finally {
    await Promise.all(clients.map((client) => closeRedis(client)));
    await server.kill();
  }
}

async function oneCase(
  which: HotVoucherRow['case'],
  clients: RedisClient[],
  pid: number,
  options: { seconds: number; inFlight: number },
): Promise<HotVoucherRow> {
  const keys = new SaleKeys(4);
  const stores = clients.map((client) => new SaleStore(client, keys));
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
  const calls0 = next;
  const redis0 = processCpuMicros(pid);
  const driver0 = process.cpuUsage();
  const started = performance.now();
  await drive(started + options.seconds * 1000);
  const seconds = (performance.now() - started) / 1000;
  const calls = next - calls0;
  const redisMicros = processCpuMicros(pid) - redis0;
  const driver = process.cpuUsage(driver0);
  const stats = await clients[0]!.info('commandstats');
  const evalsha = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(stats);
  const redisMicrosPerCall = redisMicros / calls;
  return {
    case: which,
    calls,
    seconds: Math.round(seconds * 100) / 100,
    callsPerSecond: Math.round(calls / seconds),
    redisMicrosPerCall: Math.round(redisMicrosPerCall * 100) / 100,
    redisCpuShare: Math.round((redisMicros / 1e6 / seconds) * 100) / 100,
    scriptMicrosPerCall: evalsha ? Math.round((Number(evalsha[2]) / Number(evalsha[1])) * 100) / 100 : Number.NaN,
    oneCoreCeiling: Math.round(1e6 / redisMicrosPerCall),
    driverMicrosPerCall: Math.round(((driver.user + driver.system) / calls) * 100) / 100,
  };
}

export function renderHotVoucher(rows: HotVoucherRow[], command: string, loadAverage: string): string {
  const n = (value: number) => value.toLocaleString('en-US');
  return [
    `\`${command}\`; load average ${loadAverage} (1, 5, 15 min; start → end).`,
    '',
    "| case | calls/s | Redis CPU µs/call | script wall µs/call (commandstats) | Redis core busy | one core's ceiling, calls/s | driver µs/call |",
    '|---|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (row) =>
        `| ${row.case} | ${n(row.callsPerSecond)} | ${row.redisMicrosPerCall} | ${row.scriptMicrosPerCall} | ${Math.round(row.redisCpuShare * 100)} % | ${n(row.oneCoreCeiling)} | ${row.driverMicrosPerCall} |`,
    ),
  ].join('\n');
}
