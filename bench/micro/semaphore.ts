// Acquire + release pairs per second of our semaphores against the `redis-semaphore` package's
// Semaphore (a sorted set of holders with leases, like our PermitExpirableSemaphore), on one
// Redis, in one run. Not a test: numbers depend on the machine.
//
//   npx tsx bench/micro/semaphore.ts                 # 5 s per case and mode against redis://127.0.0.1:6379
//   BENCH_DURATION_MS=2000 REDIS_URL=redis://host:6379 npx tsx bench/micro/semaphore.ts
//
// Modes: "sequential", one pair in flight; "parallel ×32", 32 loops on ONE semaphore of 32
// permits (every acquisition finds a permit: the cost of the counter, not of waiting).
import { randomUUID } from 'node:crypto';
import { cpus } from 'node:os';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { Semaphore as TheirSemaphore } from 'redis-semaphore';
import { deleteKeysWithPrefix } from '../../src/infra/redis.js';
import { LockClient } from '../../src/lib/lock/index.js';
import { timed } from './timed.js';

export interface SemaphoreBenchRow {
  semaphore: string;
  mode: string;
  pairs: number;
  pairsPerSecond: number;
  meanMsPerPair: number;
}

const LEASE_MS = 10_000;
const ROUNDS = 5;
const PERMITS = 32;

type Pair = () => Promise<void>;

export async function measureSemaphoreBench(redisUrl: string, durationMs: number): Promise<SemaphoreBenchRow[]> {
  const prefix = `bench:semaphore:${randomUUID()}:`;
  const ours = new Redis(redisUrl, { keyPrefix: prefix });
  const theirs = new Redis(redisUrl, { keyPrefix: prefix }); // a connection of its own, same prefix
  const locks = new LockClient(ours);
  const plain = locks.semaphore('plain');
  const expirable = locks.permitExpirableSemaphore('expirable');
  await plain.trySetPermits(PERMITS);
  await expirable.trySetPermits(PERMITS);
  const must = (taken: boolean): void => {
    if (!taken) throw new Error('no permit: the benchmark is meant to find one every time');
  };
  const cases: Array<[string, Pair]> = [
    [
      'hmdp-ts Semaphore',
      async () => {
        must(await plain.tryAcquire());
        await plain.release();
      },
    ],
    [
      'hmdp-ts PermitExpirableSemaphore (fixed lease)',
      async () => {
        const lease = await expirable.tryAcquire({ leaseMs: LEASE_MS });
        must(lease !== null);
        await lease!.release();
      },
    ],
    [
      'hmdp-ts PermitExpirableSemaphore (watchdog)',
      async () => {
        const lease = await expirable.tryAcquire();
        must(lease !== null);
        await lease!.release();
      },
    ],
    [
      'redis-semaphore 5.8.0 Semaphore (fixed lease)',
      async () => {
        const semaphore = new TheirSemaphore(theirs, 'theirs', PERMITS, { lockTimeout: LEASE_MS, refreshInterval: 0 });
        must(await semaphore.tryAcquire());
        await semaphore.release();
      },
    ],
    [
      'redis-semaphore 5.8.0 Semaphore (refresh)',
      async () => {
        const semaphore = new TheirSemaphore(theirs, 'theirs-refresh', PERMITS, { lockTimeout: LEASE_MS });
        must(await semaphore.tryAcquire());
        await semaphore.release();
      },
    ],
  ];
  const modes = [
    ['sequential', 1],
    [`parallel ×${PERMITS}`, PERMITS],
  ] as const;
  const rows: SemaphoreBenchRow[] = [];
  try {
    for (const [mode, loops] of modes) {
      for (const [, run] of cases) await timed(run, loops, 500, durationMs / ROUNDS); // warm-up (scripts, JIT), a slice at most
      // Cases take turns in short slices, so that background noise hits them all alike.
      const totals = cases.map(() => ({ pairs: 0, elapsedMs: 0 }));
      for (let round = 0; round < ROUNDS; round++) {
        for (const [i, [, run]] of cases.entries()) {
          const { ops, ms } = await timed(run, loops, Infinity, durationMs / ROUNDS);
          totals[i]!.pairs += ops;
          totals[i]!.elapsedMs += ms;
        }
      }
      for (const [i, [semaphore]] of cases.entries()) {
        const { pairs, elapsedMs } = totals[i]!;
        rows.push({ semaphore, mode, pairs, pairsPerSecond: Math.round((pairs / elapsedMs) * 1000), meanMsPerPair: (elapsedMs * loops) / pairs });
      }
    }
  } finally {
    await locks.close();
    const raw = new Redis(redisUrl);
    await deleteKeysWithPrefix(raw, prefix).finally(() => raw.disconnect());
    await Promise.all([ours.quit(), theirs.quit()]);
  }
  return rows;
}

export function semaphoreTable(rows: readonly SemaphoreBenchRow[]): string {
  return [
    '| semaphore | mode | pairs/s | mean ms per pair |',
    '|---|---|---:|---:|',
    ...rows.map((row) => `| ${row.semaphore} | ${row.mode} | ${row.pairsPerSecond.toLocaleString('en-US')} | ${row.meanMsPerPair.toFixed(3)} |`),
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const durationMs = Number(process.env.BENCH_DURATION_MS ?? 5_000);
  const probe = new Redis(redisUrl);
  const redisVersion = /redis_version:(\S+)/.exec(await probe.info('server'))?.[1] ?? '?';
  await probe.quit();
  console.log(
    `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, Redis ${redisVersion}, ${durationMs} ms per case and mode, lease ${LEASE_MS} ms\n`,
  );
  console.log(semaphoreTable(await measureSemaphoreBench(redisUrl, durationMs)));
}
