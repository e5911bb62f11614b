import { defineScripts, readLua, type Scripts } from '../redis-scripts/index.js';
import type { RedisClient } from './types.js';

const lua = (file: string): string => readLua(import.meta.url, file);

/** Scripts of the semaphore, the permit-expirable semaphore and the count-down latch. */
export interface SynchronizerScripts {
  /** {1, permits left} or {0, permits available}. */
  semaphoreAcquire(key: string, permits: number): Promise<[0 | 1, number]>;
  /** Permits available after adding `permits` (may be negative). */
  semaphoreRelease(key: string, permits: number, channel: string): Promise<number>;
  /** 1 set, 0 already set (unless force is '1'). */
  semaphoreSet(key: string, permits: number, channel: string, force: '0' | '1'): Promise<0 | 1>;
  semaphoreDrain(key: string): Promise<number>;
  /** {1, permits left} or {0, ms until the next lease ends, -1 if none}. */
  permitAcquire(key: string, leasesKey: string, leaseMs: number, ...ids: string[]): Promise<[0 | 1, number]>;
  /** 1 every permit was held, -1 otherwise. */
  permitRelease(key: string, leasesKey: string, channel: string, ...ids: string[]): Promise<1 | -1>;
  permitRenew(key: string, leasesKey: string, leaseMs: number, ...ids: string[]): Promise<0 | 1>;
  permitAvailable(key: string, leasesKey: string, channel: string, change: '' | 'set' | 'add', permits: number): Promise<[number, 0 | 1]>;
  latchCountDown(key: string, channel: string): Promise<number>;
  latchSet(key: string, count: number): Promise<0 | 1>;
}

const SOURCES = {
  semaphoreAcquire: { keys: 1, lua: lua('semaphore-acquire.lua') },
  semaphoreRelease: { keys: 1, lua: lua('semaphore-release.lua') },
  semaphoreSet: { keys: 1, lua: lua('semaphore-set.lua') },
  semaphoreDrain: { keys: 1, lua: lua('semaphore-drain.lua') },
  permitAcquire: { keys: 2, lua: lua('permit-acquire.lua') },
  permitRelease: { keys: 2, lua: lua('permit-release.lua') },
  permitRenew: { keys: 2, lua: lua('permit-renew.lua') },
  permitAvailable: { keys: 2, lua: lua('permit-available.lua') },
  latchCountDown: { keys: 1, lua: lua('latch-count-down.lua') },
  latchSet: { keys: 1, lua: lua('latch-set.lua') },
} as const;

const defined = new WeakMap<RedisClient, Scripts<SynchronizerScripts>>();

/** The synchronizer scripts on the client, defined once per client. */
export function synchronizerScripts(redis: RedisClient): Scripts<SynchronizerScripts> {
  let scripts = defined.get(redis);
  if (!scripts) {
    scripts = defineScripts<SynchronizerScripts>(redis, 'dsync', SOURCES);
    defined.set(redis, scripts);
  }
  return scripts;
}
