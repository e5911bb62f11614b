import { randomUUID } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';
import { deleteKeysWithPrefix } from '../../src/infra/redis.js';
import { testRedisUrl } from '../../kit/services.js';

/** A key prefix no other test file (or run) uses. */
export const uniquePrefix = (area: string): string => `test:${area}:${randomUUID()}:`;

/** A client on the shared test Redis whose keys all carry `keyPrefix`. */
export const connectRedis = (keyPrefix: string, options: RedisOptions = {}): Redis =>
  new Redis(testRedisUrl(), { keyPrefix, maxRetriesPerRequest: 3, ...options });

/** Deletes this file's keys only (SCAN + UNLINK): other test files share the Redis. */
export async function deleteKeys(prefix: string, url = testRedisUrl()): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  await deleteKeysWithPrefix(redis, prefix).finally(() => redis.disconnect());
}

/** Polls `probe` until it returns `expected` or `timeoutMs` passes; returns the last value. */
export async function eventually<T>(probe: () => Promise<T>, expected: T, timeoutMs = 3_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await probe();
  while (value !== expected && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    value = await probe();
  }
  return value;
}
