import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { CacheClient, CacheCounters } from '../../../../src/lib/cache/index.js';
import { LockClient } from '../../../../src/lib/lock/index.js';
import { connectRedis } from '../../../support/redis.js';
import { Gate } from '../../../support/gate.js';

/** One app instance as the cache sees it: its own Redis connection, lock client and counters. */
export interface Instance {
  redis: Redis;
  locks: LockClient;
  stats: CacheCounters;
  caches: CacheClient;
}

export function startInstances(keyPrefix: string, count: number): Instance[] {
  return Array.from({ length: count }, () => {
    const redis = connectRedis(keyPrefix);
    const locks = new LockClient(redis);
    const stats = new CacheCounters();
    return { redis, locks, stats, caches: new CacheClient(redis, { locks, stats }) };
  });
}

export async function stopInstances(instances: Instance[]): Promise<void> {
  for (const instance of instances) {
    await instance.caches.idle();
    await instance.locks.close();
    instance.redis.disconnect();
  }
}

/** Sum of one event over all instances. */
export const total = (instances: Instance[], cache: string, event: Parameters<CacheCounters['get']>[1]): number =>
  instances.reduce((sum, instance) => sum + instance.stats.get(cache, event), 0);

/**
 * The "database" of the library tests: rows in memory and a loader that counts its calls, can be
 * slowed down, and can be held at a gate (to look at the world while a load is in progress).
 * The loader reads the row when called, like a SELECT, and returns it after the delay / gate.
 */
export class Source<V> {
  readonly rows = new Map<string, V>();
  loads = 0;
  readonly loadedIds: string[] = [];
  delayMs = 0;
  private readonly gate = new Gate();

  readonly load = async (id: string): Promise<V | null> => {
    this.loads += 1;
    this.loadedIds.push(id);
    const row = this.rows.get(id) ?? null;
    if (this.delayMs > 0) await sleep(this.delayMs);
    await this.gate.pass();
    return row;
  };

  close(): void {
    this.gate.close();
  }

  open(): void {
    this.gate.open();
  }
}

/** `count` calls spread round-robin over the instances, all started at once. */
export function concurrently<T>(instances: readonly unknown[], count: number, call: (index: number) => Promise<T>): Promise<T[]> {
  return Promise.all(Array.from({ length: count }, (_, i) => call(i % instances.length)));
}
