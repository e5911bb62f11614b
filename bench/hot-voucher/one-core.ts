/**
 * The one-core cases of `npm run bench -- hot-voucher`: a redis-server of its own on a free port
 * (stopped by pid at the end); the driver is this process, through the app's ReserveBatches over
 * several auto-pipelined ioredis connections. Two cases: `accepting` (stock left: every order
 * takes a unit, marks the buyer and appends to the stream) and `sold out` (the script refuses
 * after reading the stock), each decided one order per script run and in batches (the app's
 * default cap), side by side. Redis CPU per order is /proc/<pid>/stat over the case divided by the
 * orders; the script's wall time is Redis' own count (INFO commandstats), which on a busy machine
 * includes time Redis was descheduled.
 */
import { closeRedis, createRedis, type RedisClient } from '../../src/infra/redis.js';
import { buildSale, SaleKeys } from '../../src/modules/seckill/index.js';
import { loadConfig } from '../../src/infra/config.js';
import { startRedisServer } from '../../kit/redis-servers.js';
import { processCpuMicros, redisPid } from '../harness/index.js';
import { round2 } from './round.js';

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
      const store = stores[loop % stores.length]!;
      while (performance.now() < until) {
        const k = next++;
        const { outcome } = await store.batches.reserve({ orderId: String(7_000_000_000_000_000_000n + BigInt(k)), userId: String(1_000 + k), voucherId });
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
