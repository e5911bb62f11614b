import { defineScripts, readLua } from '../redis-scripts/index.js';
import type { RedisClient } from './types.js';

/** What each script takes and returns. */
export interface CacheScripts {
  /** 1 written, 0 the key changed since `expectedSha1` was taken. */
  compareAndSet(key: string, expectedSha1: string, value: string, ttlMs: number): Promise<0 | 1>;
  bloomCheck(key: string, header: string, ...offsets: number[]): Promise<1 | 0 | -1>;
  bloomAdd(keyCount: number, ...keysThenArgs: Array<string | number>): Promise<number>;
  bloomBegin(building: string, header: string, lastBit: number, ttlMs: number): Promise<1>;
  bloomPublish(building: string, live: string, header: string): Promise<0 | 1>;
}

const SOURCES = {
  compareAndSet: { keys: 1, lua: readLua(import.meta.url, 'cache-set.lua') },
  bloomCheck: { keys: 1, lua: readLua(import.meta.url, 'bloom-check.lua') },
  // The number of keys varies (live only, or live + building): given per call.
  bloomAdd: { keys: 'dynamic', lua: readLua(import.meta.url, 'bloom-add.lua') },
  bloomBegin: { keys: 1, lua: readLua(import.meta.url, 'bloom-begin.lua') },
  bloomPublish: { keys: 2, lua: readLua(import.meta.url, 'bloom-publish.lua') },
} as const;

/** The cache's scripts on the client, as typed functions. */
export function defineCacheScripts(redis: RedisClient): CacheScripts {
  return defineScripts<CacheScripts>(redis, 'cache', SOURCES);
}
