/**
 * IDs per second from src/lib/id beside the floor it cannot beat: a bare `INCR` on the same Redis
 * with the same number of calls in flight (one Redis round trip each).
 */
import { IdGenerator } from '../src/lib/id/index.js';
import type { RedisClient } from '../src/infra/redis.js';
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
  const ids = new IdGenerator(redis);
  const cases: Array<[string, () => Promise<unknown>]> = [
    ['INCR (floor)', () => redis.incr('bench:id:floor')],
    ['IdGenerator.nextId', () => ids.nextId('bench')],
  ];
  const rows: OpsRow[] = [];
  for (const [mode, loops] of [['sequential', 1], [`parallel ×${options.parallelism}`, options.parallelism]] as const) {
    for (const [, call] of cases) await timed(call, loops, 200); // warm-up
    const floor = { ops: 0, ms: 0 };
    const ours = { ops: 0, ms: 0 };
    // Alternate short slices so background noise hits both alike.
    for (let slice = 0; slice < 4; slice++) {
      for (const [i, [, call]] of cases.entries()) {
        const { ops, ms } = await timed(call, loops, Infinity, options.durationMs / 8);
        const total = i === 0 ? floor : ours;
        total.ops += ops;
        total.ms += ms;
      }
    }
    const perSecond = (t: { ops: number; ms: number }) => Math.round((t.ops / t.ms) * 1000);
    rows.push({ name: cases[0]![0], mode, ops: floor.ops, opsPerSecond: perSecond(floor) });
    rows.push({ name: cases[1]![0], mode, ops: ours.ops, opsPerSecond: perSecond(ours), baseline: cases[0]![0], ratio: perSecond(ours) / perSecond(floor) });
  }
  return rows;
}
