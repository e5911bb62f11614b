/** Throughput and CPU per order with 1, 100 and 1,000 sales open at once. */
import {
  mariadbPid,
  redisPid,
  saturate,
  spreadOf,
  startCpuCount,
  startServer,
  type BenchUser,
  type CpuPerRequest,
  type RequestSource,
  type World,
} from '../harness/index.js';
import { waitForDrain } from '../sale/index.js';
import type { SalesRow } from './report.js';

/**
 * Every request a new order: request i is user u = i mod U buying voucher (u + ⌊i / U⌋) mod N,
 * so consecutive requests spread over all N sales, each user asks about once every U requests
 * (far under the per-user limit) and no pair repeats while i < U × N.
 */
class SpreadSale implements RequestSource {
  readonly method = 'POST' as const;
  private index = 0;
  failures = 0;
  constructor(
    private readonly vouchers: readonly string[],
    private readonly users: readonly BenchUser[],
  ) {}
  next() {
    const u = this.index % this.users.length;
    const voucher = this.vouchers[(u + Math.floor(this.index / this.users.length)) % this.vouchers.length]!;
    this.index += 1;
    return { path: `/api/voucher-order/seckill/${voucher}`, headers: { authorization: this.users[u]!.token } };
  }
  onResponse(_status: number, body: string): void {
    if (!body.startsWith('{"success":true')) this.failures += 1;
  }
}

export async function salesAtOnce(world: World, counts: number[], sliceRequests: number, warmUpRequests: number): Promise<SalesRow[]> {
  const server = await startServer({ env: { ...world.env, SECKILL_STRATEGY: 'async', SECKILL_WORKER: 'true', SECKILL_CONSUMER: 'bench-growth' } });
  try {
    const pids = { server: server.child.pid, redis: await redisPid(world.redis), mariadb: await mariadbPid(world.db) };
    const sources = new Map<number, SpreadSale>();
    for (const count of counts) sources.set(count, new SpreadSale(await world.createVouchers(count, world.users.length), world.users));
    const load = (source: SpreadSale, requests: number) => saturate(server.url, source, { connections: 100, durationSeconds: 1, expectedRps: requests });
    for (const source of sources.values()) await load(source, warmUpRequests);
    const slices = new Map<number, Array<{ rps: number; cpu: CpuPerRequest }>>(counts.map((count) => [count, []]));
    // Alternating slices (1, 100, 1000, 1, 100, 1000, …): drift of the machine weighs on each alike.
    for (let round = 0; round < 3; round++) {
      for (const [count, source] of sources) {
        const cpu = startCpuCount(pids);
        const phase = await load(source, sliceRequests);
        slices.get(count)!.push({ rps: phase.rps, cpu: cpu(phase.requests) });
      }
    }
    await waitForDrain(world, 120_000);
    for (const [count, source] of sources) if (source.failures > 0) throw new Error(`sales ×${count}: ${source.failures} orders were not accepted`);
    return counts.map((sales) => {
      const measured = slices.get(sales)!;
      const cpu = (part: keyof CpuPerRequest) => spreadOf(measured.map((slice) => slice.cpu[part]));
      return {
        sales,
        rps: spreadOf(measured.map((slice) => slice.rps)),
        cpu: { server: cpu('server'), redis: cpu('redis'), mariadb: cpu('mariadb'), total: cpu('total') },
      };
    });
  } finally {
    await server.stop();
  }
}
