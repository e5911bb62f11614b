import { Cluster, Redis } from 'ioredis';
import type { Config } from './config.js';

/** A standalone Redis or a Redis Cluster: application code must work with either. */
export type RedisClient = Redis | Cluster;

type RedisConfig = Pick<Config, 'redisUrl' | 'redisClusterNodes' | 'redisKeyPrefix'>;

export function createRedis(config: RedisConfig): RedisClient {
  const common = {
    keyPrefix: config.redisKeyPrefix,
    // Fail a command fast while disconnected instead of queueing it forever.
    maxRetriesPerRequest: 3,
    enableAutoPipelining: true,
  };
  if (config.redisClusterNodes.length > 0) {
    const nodes = config.redisClusterNodes.map((node) => {
      const [host, port] = node.split(':');
      return { host: host!, port: Number(port) };
    });
    return new Cluster(nodes, { keyPrefix: config.redisKeyPrefix, redisOptions: common });
  }
  return new Redis(config.redisUrl, common);
}

/** Closes politely (QUIT) and falls back to a hard disconnect if Redis is unreachable. */
export async function closeRedis(redis: RedisClient): Promise<void> {
  if (redis.status === 'end') return;
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}

/**
 * Deletes every key that starts with `prefix` (SCAN + UNLINK, never KEYS or FLUSHDB), through a
 * client without a key prefix. For tests, benchmarks and tools that own a prefix on a shared Redis.
 */
export async function deleteKeysWithPrefix(redis: Redis, prefix: string): Promise<number> {
  if (prefix === '') throw new Error('refusing to delete every key: the prefix is empty');
  let deleted = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`, 'COUNT', 1000);
    if (keys.length > 0) deleted += await redis.unlink(...keys);
    cursor = next;
  } while (cursor !== '0');
  return deleted;
}
