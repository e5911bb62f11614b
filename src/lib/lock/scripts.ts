import { readFileSync } from 'node:fs';
import type { RedisClient } from './types.js';

const readLua = (file: string): string => readFileSync(new URL(`./${file}`, import.meta.url), 'utf8');

// Lua has no include: the acquire scripts get the shared fence function prepended.
const FENCE_LUA = readLua('fence.lua');

/** The kinds of lock; each has its own acquire, release and renew scripts. */
export type LockKind = 'reentrant' | 'simple';

/** {1 new hold | 2 re-entry, fencing token} or {0, pttl of the current holder}. */
export type AcquireReply = [status: 0 | 1 | 2, value: string | number];

/** The script commands defineCommand adds to the client (kept out of ioredis' global types). */
export interface LockScripts {
  acquire(lockKey: string, fenceKey: string, owner: string, leaseMs: number, fenceTtlMs: number): Promise<AcquireReply>;
  /** 1 free now, 0 still held by the owner (re-entered), -1 not held by the owner. */
  release(lockKey: string, owner: string, channel: string): Promise<1 | 0 | -1>;
  /** 1 renewed, 0 no longer held by the owner. */
  renew(lockKey: string, fenceKey: string, owner: string, leaseMs: number, fenceTtlMs: number): Promise<1 | 0>;
}

const SOURCES: Record<LockKind, Record<keyof LockScripts, { keys: number; lua: string }>> = {
  reentrant: {
    acquire: { keys: 2, lua: FENCE_LUA + readLua('reentrant-acquire.lua') },
    release: { keys: 1, lua: readLua('reentrant-release.lua') },
    renew: { keys: 2, lua: readLua('reentrant-renew.lua') },
  },
  simple: {
    acquire: { keys: 2, lua: FENCE_LUA + readLua('simple-acquire.lua') },
    release: { keys: 1, lua: readLua('simple-release.lua') },
    renew: { keys: 2, lua: readLua('simple-renew.lua') },
  },
};

/**
 * Defines the scripts of one kind of lock on the client (EVALSHA with automatic fallback to
 * EVAL, and the client's key prefix applied to KEYS) and returns them as typed functions.
 */
export function defineLockScripts(redis: RedisClient, kind: LockKind): LockScripts {
  const commands = redis as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const define = (operation: keyof LockScripts) => {
    const name = `dlock${capitalize(kind)}${capitalize(operation)}`;
    const { keys, lua } = SOURCES[kind][operation];
    redis.defineCommand(name, { numberOfKeys: keys, lua });
    return (...args: unknown[]) => commands[name]!(...args);
  };
  return {
    acquire: define('acquire') as LockScripts['acquire'],
    release: define('release') as LockScripts['release'],
    renew: define('renew') as LockScripts['renew'],
  };
}

const capitalize = (word: string): string => word.charAt(0).toUpperCase() + word.slice(1);
