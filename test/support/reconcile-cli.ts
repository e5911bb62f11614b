import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { testRedisUrl } from '../../kit/services.js';
import type { TestEnv } from './test-env.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * `npm run reconcile -- <args>` on a test env's database and key prefix, as its own process: the
 * script `npm run reconcile` runs, under node --import tsx as the other CLI tests do (`npx tsx`
 * would start a second node for each run). `settings` adds or, with undefined, removes variables
 * of its environment (SECKILL_MAX_BUCKETS is unset unless given: the CLI must not need it).
 */
export async function runReconcileCli(env: TestEnv, args: string[], settings: Record<string, string | undefined> = {}): Promise<CliRun> {
  const given: Record<string, string | undefined> = {
    ...process.env,
    MYSQL_URL: env.mysqlUrl,
    REDIS_URL: testRedisUrl(),
    REDIS_KEY_PREFIX: env.keyPrefix,
    SECKILL_STREAM_SHARDS: String(env.config.seckill.streamShards),
    REDIS_CLUSTER_NODES: '',
    SECKILL_MAX_BUCKETS: undefined,
    ...settings,
  };
  const childEnv = Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined));
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli/reconcile.ts', ...args], { env: childEnv });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as CliRun;
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}
