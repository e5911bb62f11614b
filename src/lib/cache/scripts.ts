import { readFileSync } from 'node:fs';
import type { RedisClient } from './types.js';

const readLua = (file: string): string => readFileSync(new URL(`./${file}`, import.meta.url), 'utf8');

/** The script commands defineCommand adds to the client (kept out of ioredis' global types). */
export interface CacheScripts {
  /** 1 written, 0 the key changed since `expectedSha1` was taken. */
  compareAndSet(key: string, expectedSha1: string, value: string, ttlMs: number): Promise<0 | 1>;
  bloomCheck(key: string, header: string, ...offsets: number[]): Promise<1 | 0 | -1>;
  bloomAdd(keyCount: number, ...keysThenArgs: Array<string | number>): Promise<number>;
  bloomBegin(building: string, header: string, lastBit: number, ttlMs: number): Promise<1>;
  bloomPublish(building: string, live: string, header: string): Promise<0 | 1>;
}

const SOURCES = {
  compareAndSet: { name: 'cacheCompareAndSet', numberOfKeys: 1, lua: readLua('cache-set.lua') },
  bloomCheck: { name: 'cacheBloomCheck', numberOfKeys: 1, lua: readLua('bloom-check.lua') },
  // The number of keys varies (live only, or live + building): given per call.
  bloomAdd: { name: 'cacheBloomAdd', numberOfKeys: undefined, lua: readLua('bloom-add.lua') },
  bloomBegin: { name: 'cacheBloomBegin', numberOfKeys: 1, lua: readLua('bloom-begin.lua') },
  bloomPublish: { name: 'cacheBloomPublish', numberOfKeys: 2, lua: readLua('bloom-publish.lua') },
} as const;

/**
 * Defines the cache's scripts on the client (EVALSHA with fallback to EVAL, the client's key
 * prefix applied to KEYS) and returns them as typed functions.
 */
export function defineCacheScripts(redis: RedisClient): CacheScripts {
  const commands = redis as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const scripts: Record<string, unknown> = {};
  for (const [operation, { name, numberOfKeys, lua }] of Object.entries(SOURCES)) {
    if (typeof commands[name] !== 'function') {
      redis.defineCommand(name, numberOfKeys === undefined ? { lua } : { numberOfKeys, lua });
    }
    scripts[operation] = (...args: unknown[]) => commands[name]!(...args);
  }
  return scripts as unknown as CacheScripts;
}
