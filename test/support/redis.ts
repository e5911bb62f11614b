import { randomUUID } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';
import { deleteKeysWithPrefix } from '../../src/infra/redis.js';
import { testRedisUrl } from '../../kit/services.js';

/** A key prefix no other test file (or run) uses. */
export const uniquePrefix = (area: string): string => `test:${area}:${randomUUID()}:`;

/** A client on the shared test Redis whose keys all carry `keyPrefix`. */
export const connectRedis = (keyPrefix: string, options: RedisOptions = {}): Redis =>
  new Redis(testRedisUrl(), { keyPrefix, maxRetriesPerRequest: 3, ...options });

/** Every key of the shared test Redis matching a pattern, unprefixed (SCAN to the end, never KEYS). */
export async function scanKeys(pattern: string): Promise<string[]> {
  const raw = new Redis(testRedisUrl());
  const found: string[] = [];
  try {
    let cursor = '0';
    do {
      const [next, keys] = await raw.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      found.push(...keys);
      cursor = next;
    } while (cursor !== '0');
    return found;
  } finally {
    raw.disconnect();
  }
}

/** Deletes every key under a prefix (SCAN + UNLINK; never FLUSHDB: other test files share the Redis). */
export async function deleteKeys(prefix: string): Promise<void> {
  const raw = new Redis(testRedisUrl(), { maxRetriesPerRequest: 1 });
  await deleteKeysWithPrefix(raw, prefix).finally(() => raw.disconnect());
}
