import { defineScripts, readLua } from '../redis-scripts/index.js';
import type { RedisClient } from './types.js';

/** The kinds of lock; each has its own acquire, release and renew scripts. */
export type LockKind = 'reentrant' | 'simple';

/** {1 new hold | 2 re-entry, fencing token} or {0, pttl of the current holder}. */
export type AcquireReply = [status: 0 | 1 | 2, value: string | number];

/** What each script takes and returns. */
export interface LockScripts {
  acquire(lockKey: string, fenceKey: string, owner: string, leaseMs: number, fenceTtlMs: number): Promise<AcquireReply>;
  /** 1 free now, 0 still held by the owner (re-entered), -1 not held by the owner. */
  release(lockKey: string, owner: string, channel: string): Promise<1 | 0 | -1>;
  /** 1 renewed, 0 no longer held by the owner. */
  renew(lockKey: string, fenceKey: string, owner: string, leaseMs: number, fenceTtlMs: number): Promise<1 | 0>;
}

const SOURCES = {
  reentrant: {
    acquire: { keys: 2, lua: readLua(import.meta.url, 'reentrant-acquire.lua') },
    release: { keys: 1, lua: readLua(import.meta.url, 'reentrant-release.lua') },
    renew: { keys: 2, lua: readLua(import.meta.url, 'reentrant-renew.lua') },
  },
  simple: {
    acquire: { keys: 2, lua: readLua(import.meta.url, 'simple-acquire.lua') },
    release: { keys: 1, lua: readLua(import.meta.url, 'simple-release.lua') },
    renew: { keys: 2, lua: readLua(import.meta.url, 'simple-renew.lua') },
  },
} as const;

/** The scripts of one kind of lock on the client, as typed functions. */
export function defineLockScripts(redis: RedisClient, kind: LockKind): LockScripts {
  return defineScripts<LockScripts>(redis, `dlock${kind.charAt(0).toUpperCase()}${kind.slice(1)}`, SOURCES[kind]);
}
