import { sql } from 'kysely';
import type { Config } from './config.js';
import type { Db } from './db.js';
import { redactUrl } from './redact.js';
import { redisAddress, type RedisClient } from './redis.js';
import { DependencyUnavailable, unavailableDependency, type DependencyName } from './transient-errors.js';

export interface Dependencies {
  redis?: RedisClient;
  db?: Db;
}

/**
 * Asks each given dependency for a trivial answer (PING, SELECT 1), all within `timeoutMs`;
 * returns one DependencyUnavailable, naming its address, per dependency that did not answer.
 */
export async function checkDependencies(
  config: Pick<Config, 'redisUrl' | 'redisClusterNodes' | 'mysqlUrl'>,
  deps: Dependencies,
  timeoutMs: number,
): Promise<DependencyUnavailable[]> {
  const checks: Array<Promise<DependencyUnavailable | undefined>> = [];
  if (deps.redis) {
    const redis = deps.redis;
    checks.push(probe('Redis', redisAddress(config), () => redis.ping(), timeoutMs));
  }
  if (deps.db) {
    const db = deps.db;
    checks.push(probe('MySQL', redactUrl(config.mysqlUrl), () => sql`SELECT 1`.execute(db), timeoutMs));
  }
  return (await Promise.all(checks)).filter((problem) => problem !== undefined);
}

async function probe(
  dependency: DependencyName,
  address: string,
  check: () => Promise<unknown>,
  timeoutMs: number,
): Promise<DependencyUnavailable | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<DependencyUnavailable>((resolve) => {
    timer = setTimeout(() => resolve(new DependencyUnavailable(dependency, address, true, new Error(`no answer within ${timeoutMs} ms`))), timeoutMs);
  });
  const answer = check().then(
    () => undefined,
    (error: unknown) =>
      error instanceof DependencyUnavailable ? error : new DependencyUnavailable(dependency, address, unavailableDependency(error)?.stalled ?? false, error),
  );
  try {
    return await Promise.race([answer, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The dependency an error of a command says is unavailable, with its address, for a message such
 * as `cannot run: Redis at redis://10.0.0.5:6379/0 did not answer in time`; undefined for other errors.
 */
export function describeUnavailable(error: unknown, config: Pick<Config, 'redisUrl' | 'redisClusterNodes' | 'mysqlUrl'>): string | undefined {
  if (error instanceof DependencyUnavailable) return error.message;
  const unavailable = unavailableDependency(error);
  if (!unavailable) return undefined;
  const address = unavailable.dependency === 'Redis' ? redisAddress(config) : redactUrl(config.mysqlUrl);
  return new DependencyUnavailable(unavailable.dependency, address, unavailable.stalled, error).message;
}
