import { randomUUID } from 'node:crypto';
import { defineScripts, readLua } from '../redis-scripts/index.js';
import { currentContextId } from './context.js';
import { assertDuration, fenceKey, fenceTtlMs, lockKey, type LockEngine } from './engine.js';
import type { HoldBackend } from './hold.js';
import type { AcquireReply } from './scripts.js';
import type { Lock, LockHandle, RedisClient, TryLockOptions } from './types.js';
import { acquire, handleFor, lockOrTimeout, unlockLatest, type Attempt } from './waiting.js';

/** Waiters in arrival order: a list of owners. Same hash tag as the lock key (one Cluster slot). */
export const fairQueueKey = (name: string): string => `lock:{${name}}:queue`;
/** Queued owners with the server time (ms) until which each counts as alive. */
export const fairWaitersKey = (name: string): string => `lock:{${name}}:waiters`;

export interface FairLockOptions {
  /**
   * A queued waiter that has not been heard from for this long (its process died or hung) is
   * dropped from the queue, so it never blocks the waiters behind it. Live waiters refresh their
   * entry at least every third of it. Default 5 000 (Redisson's threadWaitTime).
   */
  waiterLeaseMs?: number;
}

interface FairScripts {
  acquire(
    lock: string,
    fence: string,
    queue: string,
    waiters: string,
    owner: string,
    leaseMs: number,
    fenceTtl: number,
    waiterLeaseMs: number,
    channelPrefix: string,
  ): Promise<AcquireReply>;
  /** 1 free now, 0 still held by the owner (re-entered), -1 not held by the owner. */
  release(lock: string, queue: string, waiters: string, owner: string, channelPrefix: string): Promise<1 | 0 | -1>;
  leave(lock: string, queue: string, waiters: string, owner: string, channelPrefix: string): Promise<number>;
  /** The reentrant lock's renewal: the fair lock keeps the same hash. 1 renewed, 0 not held. */
  renew(lock: string, fence: string, owner: string, leaseMs: number, fenceTtl: number): Promise<1 | 0>;
}

const SOURCES = {
  acquire: { keys: 4, lua: readLua(import.meta.url, 'fair-acquire.lua') },
  release: { keys: 3, lua: readLua(import.meta.url, 'fair-release.lua') },
  leave: { keys: 3, lua: readLua(import.meta.url, 'fair-leave.lua') },
  renew: { keys: 2, lua: readLua(import.meta.url, 'reentrant-renew.lua') },
};

const scriptsByClient = new WeakMap<RedisClient, FairScripts>();
function fairScripts(redis: RedisClient): FairScripts {
  let scripts = scriptsByClient.get(redis);
  if (!scripts) scriptsByClient.set(redis, (scripts = defineScripts<FairScripts>(redis, 'dlockFair', SOURCES)));
  return scripts;
}

/**
 * Redisson's RFairLock: a reentrant lock granted in arrival order across processes. Waiters queue
 * in Redis; a release wakes only the head of the queue (on a channel of its own); a newcomer
 * never overtakes a queued waiter. A waiter whose process died is dropped after `waiterLeaseMs`.
 * Owners are async contexts, as for ReentrantLock.
 */
export class FairLock implements Lock {
  private readonly waiterLeaseMs: number;

  constructor(
    private readonly engine: LockEngine,
    readonly name: string,
    options: FairLockOptions = {},
  ) {
    assertLockName(name);
    this.waiterLeaseMs = options.waiterLeaseMs ?? 5_000;
    assertDuration('waiterLeaseMs', this.waiterLeaseMs, { min: 3 });
  }

  get defaultLeaseMs(): number {
    return this.engine.defaultLeaseMs;
  }

  /**
   * Waits up to `waitMs` (default 0) in the queue. With `waitMs` 0 it takes the lock only if it
   * is free and nobody is queued (it never jumps the queue).
   */
  tryLock(options: TryLockOptions = {}): Promise<LockHandle | null> {
    const owner = `${this.engine.instanceId}:${currentContextId() ?? randomUUID()}`;
    const channelPrefix = this.channelPrefix();
    return acquire(
      this.engine,
      this.name,
      {
        kind: 'fair',
        channel: channelPrefix + owner,
        sleepCapMs: Math.min(this.engine.pollMs, Math.floor(this.waiterLeaseMs / 3)),
        attempt: (queued) => this.attempt(owner, options.leaseMs, queued),
        gaveUp: () => this.scripts.leave(lockKey(this.name), fairQueueKey(this.name), fairWaitersKey(this.name), owner, channelPrefix),
      },
      options,
    );
  }

  lock(options: TryLockOptions = {}): Promise<LockHandle> {
    return lockOrTimeout(this.name, (tryOptions) => this.tryLock(tryOptions), options);
  }

  async isLocked(): Promise<boolean> {
    return (await this.engine.redis.exists(lockKey(this.name))) === 1;
  }

  /** Owners waiting, head first (for monitoring; dead ones are dropped by the next script call). */
  queue(): Promise<string[]> {
    return this.engine.redis.lrange(fairQueueKey(this.name), 0, -1);
  }

  /** Releases the latest hold of the current async context; LockNotHeldError if it has none. */
  unlock(): Promise<void> {
    const contextId = currentContextId();
    return unlockLatest(this.engine, this.name, contextId ? this.holdId(`${this.engine.instanceId}:${contextId}`) : undefined);
  }

  /** Holds of the current async context according to Redis (0 when it does not hold the lock). */
  async holdCount(): Promise<number> {
    const contextId = currentContextId();
    if (!contextId) return 0;
    return Number((await this.engine.redis.hget(lockKey(this.name), `${this.engine.instanceId}:${contextId}`)) ?? 0);
  }

  private get scripts(): FairScripts {
    return fairScripts(this.engine.redis);
  }

  private channelPrefix(): string {
    return `${this.engine.releaseChannel(this.name)}:fair:`;
  }

  private holdId(owner: string): string {
    return `fair\u0000${this.name}\u0000${owner}`;
  }

  private async attempt(owner: string, leaseMs: number | undefined, queued: boolean): Promise<Attempt> {
    const { name } = this;
    const lease = leaseMs ?? this.engine.defaultLeaseMs;
    const sentAt = performance.now();
    const [status, value] = await this.scripts.acquire(
      lockKey(name),
      fenceKey(name),
      fairQueueKey(name),
      fairWaitersKey(name),
      owner,
      lease,
      fenceTtlMs(lease),
      queued ? this.waiterLeaseMs : 0,
      this.channelPrefix(),
    );
    if (status === 0) return { handle: null, retryInMs: Number(value) };
    const handle = await handleFor(this.engine, {
      id: this.holdId(owner),
      name,
      fencingToken: BigInt(value),
      reentry: status === 2,
      backend: this.backend(owner),
      sentAt,
      leaseMs: lease,
      watchdog: leaseMs === undefined,
    });
    return { handle };
  }

  private backend(owner: string): HoldBackend {
    const { name, scripts } = this;
    const channelPrefix = this.channelPrefix();
    return {
      renew: async (leaseMs) => (await scripts.renew(lockKey(name), fenceKey(name), owner, leaseMs, fenceTtlMs(leaseMs))) === 1,
      release: () => scripts.release(lockKey(name), fairQueueKey(name), fairWaitersKey(name), owner, channelPrefix),
    };
  }
}

/** Braces would move the Cluster hash tag, and all keys of one lock must share one slot. */
export function assertLockName(name: string): void {
  if (name.length === 0 || /[{}]/.test(name)) {
    throw new TypeError(`Invalid lock name (empty or with braces): ${JSON.stringify(name)}`);
  }
}
