/**
 * IDs per second from src/lib/id beside the floor it cannot beat: a bare `INCR` on the same Redis
 * with the same number of calls in flight (one Redis round trip each).
 */
import { IdGenerator } from '../../src/lib/id/index.js';
import type { RedisClient } from '../../src/infra/redis.js';
import { timed } from './timed.js';

export interface OpsRow {
  name: string;
  /** "sequential": one call in flight; "parallel ×N": N loops at once. */
  mode: string;
  ops: number;
  opsPerSecond: number;
  /** Name of the row this one is compared with, and the ratio. */
  baseline?: string;
  ratio?: number;
}

export async function measureIds(redis: RedisClient, options: { durationMs: number; parallelism: number }): Promise<OpsRow[]> {
  const single = new IdGenerator(redis);
  const blocks = new IdGenerator(redis, { blockSize: 100 });
  const cases: Array<[string, () => Promise<unknown>]> = [
    ['INCR (floor)', () => redis.incr('bench:id:floor')],
    ['IdGenerator.nextId', () => single.nextId('bench')],
    ['IdGenerator.nextId, blocks of 100', () => blocks.nextId('bench-blocks')],
  ];
  const rows: OpsRow[] = [];
  for (const [mode, loops] of [
    ['sequential', 1],
    [`parallel ×${options.parallelism}`, options.parallelism],
  ] as const) {
    for (const [, call] of cases) await timed(call, loops, 200); // warm-up
    const totals = cases.map(() => ({ ops: 0, ms: 0 }));
    // Alternate short slices so background noise hits every case alike.
    for (let slice = 0; slice < 4; slice++) {
      for (const [i, [, call]] of cases.entries()) {
        const { ops, ms } = await timed(call, loops, Infinity, options.durationMs / 8);
        totals[i]!.ops += ops;
        totals[i]!.ms += ms;
      }
    }
    const perSecond = (t: { ops: number; ms: number }) => Math.round((t.ops / t.ms) * 1000);
    const floor = perSecond(totals[0]!);
    for (const [i, [name]] of cases.entries()) {
      const rate = perSecond(totals[i]!);
      rows.push({ name, mode, ops: totals[i]!.ops, opsPerSecond: rate, ...(i > 0 ? { baseline: cases[0]![0], ratio: rate / floor } : {}) });
    }
  }
  return rows;
}
