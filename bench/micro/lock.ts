// Uncontended lock + unlock pairs per second: our simple, reentrant, fair and read-write locks against the
// `redlock` npm package (v5) and redis-semaphore's Mutex, on one Redis, in one run. Not a test: numbers depend on the machine.
//
//   npx tsx bench/micro/lock.ts                      # 5 s per case against redis://127.0.0.1:6379
//   BENCH_DURATION_MS=2000 REDIS_URL=redis://host:6379 npx tsx bench/micro/lock.ts
import { randomUUID } from 'node:crypto';
import { cpus } from 'node:os';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
// @ts-expect-error -- redlock's package.json "exports" hides its .d.ts from NodeNext resolution
import RedlockUntyped from 'redlock';
import { Mutex } from 'redis-semaphore';
import { deleteKeysWithPrefix } from '../../src/infra/redis.js';
import { LockClient } from '../../src/lib/lock/index.js';
import { timed } from './timed.js';

export interface LockBenchOptions {
  redisUrl?: string;
  /** Timed duration of each case and mode (taken in 5 slices, taking turns with the other cases). */
  durationMs?: number;
  /** Independent lock names used at once in the parallel mode. */
  parallelism?: number;
}

export interface LockBenchRow {
  lock: string;
  /** "sequential": one pair in flight; "parallel": `parallelism` loops on distinct names. */
  mode: string;
  pairs: number;
  pairsPerSecond: number;
  /** Mean time of one lock + unlock pair as one caller sees it. */
  meanMsPerPair: number;
}

type Pair = (name: string) => Promise<void>;

/** The part of redlock's API used here (its own types cannot be resolved, see the import). */
interface Redlock {
  acquire(resources: string[], durationMs: number): Promise<{ release(): Promise<unknown> }>;
}
const Redlock = RedlockUntyped as new (clients: Redis[], settings: { retryCount: number }) => Redlock;

const LEASE_MS = 10_000;
const ROUNDS = 5;

export async function measureLockBench(options: LockBenchOptions = {}): Promise<LockBenchRow[]> {
  const { redisUrl = 'redis://127.0.0.1:6379', durationMs = 5_000, parallelism = 32 } = options;
  const prefix = `bench:lock:${randomUUID()}:`;
  const ours = new Redis(redisUrl, { keyPrefix: prefix });
  const theirs = new Redis(redisUrl); // redlock gets prefixed resource names instead
  const mutexRedis = new Redis(redisUrl, { keyPrefix: prefix }); // redis-semaphore: a connection of its own too
  const locks = new LockClient(ours);
  const redlock = new Redlock([theirs], { retryCount: 0 });

  const cases: Array<[string, Pair]> = [
    ['hmdp-ts SimpleLock (fixed lease)', (name) => pair(locks.simpleLock(name).tryLock({ leaseMs: LEASE_MS }))],
    ['hmdp-ts ReentrantLock (fixed lease)', (name) => pair(locks.lock(name).tryLock({ leaseMs: LEASE_MS }))],
    ['hmdp-ts ReentrantLock (watchdog)', (name) => pair(locks.lock(name).tryLock())],
    ['hmdp-ts FairLock (fixed lease)', (name) => pair(locks.fairLock(name).tryLock({ leaseMs: LEASE_MS }))],
    ['hmdp-ts ReadWriteLock read (fixed lease)', (name) => pair(locks.readWriteLock(name).readLock().tryLock({ leaseMs: LEASE_MS }))],
    ['hmdp-ts ReadWriteLock write (fixed lease)', (name) => pair(locks.readWriteLock(name).writeLock().tryLock({ leaseMs: LEASE_MS }))],
    ['redlock 5.0.0-beta.2 (1 server)', async (name) => (await redlock.acquire([`${prefix}${name}`], LEASE_MS)).release().then(() => undefined)],
    ['redis-semaphore 5.8.0 Mutex (fixed lease)', (name) => mutexPair(new Mutex(mutexRedis, name, { lockTimeout: LEASE_MS, refreshInterval: 0 }))],
  ];

  const modes = [
    ['sequential', 1],
    [`parallel ×${parallelism}`, parallelism],
  ] as const;
  const rows: LockBenchRow[] = [];
  try {
    for (const [mode, loops] of modes) {
      // Warm-up (scripts, JIT): up to 1,000 calls a loop, but no longer than one slice, so that a
      // loaded host does not stretch the step from seconds to minutes.
      for (const [, run] of cases) await timed((loop) => run(`bench-${loop}`), loops, 1_000, durationMs / ROUNDS);
      // Cases take turns in short slices, so that background noise hits them all alike.
      const totals = cases.map(() => ({ pairs: 0, elapsedMs: 0 }));
      for (let round = 0; round < ROUNDS; round++) {
        for (const [i, [, run]] of cases.entries()) {
          const { ops: pairs, ms: elapsedMs } = await timed((loop) => run(`bench-${loop}`), loops, Infinity, durationMs / ROUNDS);
          totals[i]!.pairs += pairs;
          totals[i]!.elapsedMs += elapsedMs;
        }
      }
      for (const [i, [lock]] of cases.entries()) {
        const { pairs, elapsedMs } = totals[i]!;
        rows.push({
          lock,
          mode,
          pairs,
          pairsPerSecond: Math.round((pairs / elapsedMs) * 1000),
          meanMsPerPair: (elapsedMs * loops) / pairs,
        });
      }
    }
  } finally {
    await locks.close();
    await deleteKeysWithPrefix(theirs, prefix);
    await Promise.all([ours.quit(), theirs.quit(), mutexRedis.quit()]);
  }
  return rows;
}

async function pair(acquisition: Promise<{ release(): Promise<boolean> } | null>): Promise<void> {
  const handle = await acquisition;
  if (!handle) throw new Error('lock unexpectedly held: the benchmark is meant to be uncontended');
  await handle.release();
}

async function mutexPair(mutex: Mutex): Promise<void> {
  if (!(await mutex.tryAcquire())) throw new Error('mutex unexpectedly held: the benchmark is meant to be uncontended');
  await mutex.release();
}

export function lockTable(rows: readonly LockBenchRow[]): string {
  const lines = [
    '| lock | mode | pairs/s | mean ms per pair |',
    '|---|---|---:|---:|',
    ...rows.map((row) => `| ${row.lock} | ${row.mode} | ${row.pairsPerSecond.toLocaleString('en-US')} | ${row.meanMsPerPair.toFixed(3)} |`),
  ];
  return lines.join('\n');
}

/** Measures and returns the Markdown to print: one line on the setup, then the table. */
export async function runLockBench(options: LockBenchOptions = {}): Promise<string> {
  const redisUrl = options.redisUrl ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const durationMs = options.durationMs ?? Number(process.env.BENCH_DURATION_MS ?? 5_000);
  const probe = new Redis(redisUrl);
  const redisVersion = /redis_version:(\S+)/.exec(await probe.info('server'))?.[1] ?? '?';
  await probe.quit();
  const rows = await measureLockBench({ ...options, redisUrl, durationMs });
  return (
    `Redis ${redisVersion} at ${redisUrl}, ${durationMs} ms per case and mode (5 interleaved slices), ` +
    `lease ${LEASE_MS} ms, every loop on its own lock name (uncontended), default ioredis options.\n\n` +
    lockTable(rows)
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(`Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}\n`);
  console.log(await runLockBench());
}
