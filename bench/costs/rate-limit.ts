/**
 * What the order limits cost, next to the reservation they guard: `npx tsx bench/costs/rate-limit.ts`.
 *
 * Starts a private redis-server (so its command statistics hold only these calls), runs N calls
 * of each at a concurrency of 100 through one auto-pipelined client, and prints per call the
 * in-process rate, this process' CPU time and Redis' own CPU time (INFO commandstats; a script's EVALSHA time includes
 * the commands it runs). Compared: reserve.lua; the per-user + per-IP check for a user's first
 * request of a second (local burst, no command), with the sale admission limiter, and for the
 * second request (fixed-window.lua, one call); and the same two counters as plain commands
 * (INCR + PEXPIRE NX each), the alternative docs/operations.md weighs.
 */
import { Redis } from 'ioredis';
import { startRedisServer } from '../../kit/redis-servers.js';
import { AdmissionLimiter, RateLimiter } from '../../src/lib/rate-limit/index.js';
import { buildSale, OrderLimits, SaleKeys } from '../../src/modules/seckill/index.js';

const CALLS = 20_000;
/** Buyers of a sale come from many addresses: a thousand here. */
const ipOf = (i: number): string => `10.0.${Math.floor(i / 250) % 4}.${i % 250}`;
const CONCURRENCY = 100;

const server = await startRedisServer();
const redis = new Redis(server.url, { enableAutoPipelining: true });
try {
  const sale = buildSale(redis, new SaleKeys(4));
  await sale.publisher.publish({ voucherId: '7', stock: 10_000_000, begin: new Date(Date.now() - 3600_000), end: new Date(Date.now() + 3600_000) });
  const limiter = new RateLimiter(redis);
  const userAndIp = new OrderLimits(limiter, new AdmissionLimiter(redis, { name: 'sale', ratePerSecond: 0 }), { perUser: 5, perIp: 1_000_000 });
  const withGate = new OrderLimits(limiter, new AdmissionLimiter(redis, { name: 'sale', ratePerSecond: 1_000_000 }), { perUser: 5, perIp: 1_000_000 });
  for (let round = 0; round < 2; round += 1) {
    const user = (i: number) => String(round * 10 * CALLS + i); // every call a new user, as in a sale
    await measure('reserve.lua (the reservation)', (i) => sale.batches.reserve({ orderId: `9${user(i)}`, userId: user(i), voucherId: '7' }));
    // A buyer's first request of a second passes on the local burst: no Redis command at all.
    await measure('per user + per IP, first request of a user', (i) => userAndIp.check(user(CALLS + i), ipOf(i), '7'));
    await measure('  + sale admission', (i) => withGate.check(user(2 * CALLS + i), ipOf(i), '7'));
    // Two requests of one user in a second: the first passes locally, the second goes to Redis
    // (fixed-window.lua, one call that also charges the first).
    await measure("per user + per IP, a user's 2 requests", async (i) => {
      await userAndIp.check(user(3 * CALLS + i), ipOf(i), '7');
      await userAndIp.check(user(3 * CALLS + i), ipOf(i), '7');
    });
    await measure('plain INCR + PEXPIRE NX, two counters', (i) => {
      const key = `plain:${user(i)}`;
      return Promise.all([redis.incr(key), redis.pexpire(key, 1000, 'NX'), redis.incr('plain:ip'), redis.pexpire('plain:ip', 1000, 'NX')]);
    });
  }
} finally {
  redis.disconnect();
  await server.kill();
}

async function measure(name: string, call: (i: number) => Promise<unknown>): Promise<void> {
  await redis.config('RESETSTAT');
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  for (let i = 0; i < CALLS; i += CONCURRENCY) await Promise.all(Array.from({ length: CONCURRENCY }, (_, j) => call(i + j)));
  const cpu = process.cpuUsage(cpuBefore);
  const seconds = (performance.now() - started) / 1000;
  const stats = [...(await redis.info('commandstats')).matchAll(/cmdstat_(\w+):calls=(\d+),usec=(\d+)/g)]
    .map(([, command, calls, usec]) => ({ command: command!, calls: Number(calls), usec: Number(usec) }))
    .filter(({ command }) => command !== 'info' && command !== 'config');
  const scripted = stats.some(({ command }) => command === 'evalsha');
  const counted = scripted ? stats.filter(({ command }) => command === 'evalsha') : stats;
  const calls = counted.reduce((sum, stat) => sum + stat.calls, 0);
  const usec = counted.reduce((sum, stat) => sum + stat.usec, 0);
  console.log(
    `${name.padEnd(42)} ${Math.round(CALLS / seconds)
      .toLocaleString('en')
      .padStart(
        7,
      )} calls/s in-process, Node ${((cpu.user + cpu.system) / CALLS).toFixed(1)} µs CPU per call   Redis: ${(calls / CALLS).toFixed(3)} commands, ${(usec / CALLS).toFixed(1)} µs CPU per call`,
  );
}
