/**
 * The micro-benchmarks' door: in-process loops against one Redis, no HTTP. `npm run bench` runs
 * `id` (measureIds) and `lock` (measureLockBench); lock.ts and semaphore.ts also run alone
 * (`npx tsx bench/micro/lock.ts`, `npx tsx bench/micro/semaphore.ts`).
 */
export { measureIds, type OpsRow } from './id.js';
export { measureLockBench, type LockBenchRow } from './lock.js';
