import { randomUUID } from 'node:crypto';
import { defineScripts, readLua } from '../redis-scripts/index.js';
import { currentContextId } from './context.js';
import { fenceTtlMs, type LockEngine } from './engine.js';
import { LockUpgradeError } from './errors.js';
import { assertLockName } from './fair-lock.js';
import type { HoldBackend } from './hold.js';
import type { Waiter } from './release-notifier.js';
import type { Lock, LockHandle, RedisClient, TryLockOptions } from './types.js';
import { acquire, handleFor, lockOrTimeout, unlockLatest, type Attempt } from './waiting.js';

/** Hash: mode, writer, and a hold count per owner and kind. All keys of one name share the hash tag. */
export const rwLockKey = (name: string): string => `rwlock:{${name}}`;
/** Sorted set: the lease end (server ms) of each owner's read and write hold. */
export const rwLeasesKey = (name: string): string => `rwlock:{${name}}:leases`;
/** Last fencing token of the read-write lock (its own counter, not the plain lock's). */
export const rwFenceKey = (name: string): string => `rwlock:{${name}}:fence`;

type Mode = 'read' | 'write';

/** {1 new hold | 2 re-entry, token}, {0, ms until a lease ends, mode held}, {-1, 0} upgrade refused. */
type RwAcquireReply = [1 | 2, string] | [0, number, Mode] | [-1, 0];

interface RwScripts {
  acquire(lock: string, leases: string, fence: string, owner: string, mode: Mode, leaseMs: number, fenceTtl: number): Promise<RwAcquireReply>;
  /** 1 the owner's hold of this kind ended, 0 still held (re-entered), -1 not held. */
  release(lock: string, leases: string, owner: string, mode: Mode, channel: string): Promise<1 | 0 | -1>;
  renew(lock: string, leases: string, fence: string, owner: string, mode: Mode, leaseMs: number, fenceTtl: number): Promise<1 | 0>;
  /** {1 some owner holds that lock | 0, the owner's holds of it}; owner '' counts none. */
  held(lock: string, leases: string, kind: 'r' | 'w', owner: string): Promise<[1 | 0, number]>;
}

const SOURCES = {
  acquire: { keys: 3, lua: readLua(import.meta.url, 'rw-acquire.lua') },
  release: { keys: 2, lua: readLua(import.meta.url, 'rw-release.lua') },
  renew: { keys: 3, lua: readLua(import.meta.url, 'rw-renew.lua') },
  held: { keys: 2, lua: readLua(import.meta.url, 'rw-held.lua') },
};

const scriptsByClient = new WeakMap<RedisClient, RwScripts>();
function rwScripts(redis: RedisClient): RwScripts {
  let scripts = scriptsByClient.get(redis);
  if (!scripts) scriptsByClient.set(redis, (scripts = defineScripts<RwScripts>(redis, 'dlockRw', SOURCES)));
  return scripts;
}

/**
 * Read waiters of this process, by engine and channel. A release wakes one waiter per process
 * (ReleaseNotifier); when readers may enter, one reader getting in passes the news to the other
 * readers of its process, which would otherwise sleep until their poll.
 */
const readWaiters = new WeakMap<LockEngine, Map<string, Set<Waiter>>>();
function readersOf(engine: LockEngine, channel: string): Set<Waiter> {
  let byChannel = readWaiters.get(engine);
  if (!byChannel) readWaiters.set(engine, (byChannel = new Map<string, Set<Waiter>>()));
  let waiters = byChannel.get(channel);
  if (!waiters) byChannel.set(channel, (waiters = new Set()));
  return waiters;
}
function forgetReader(engine: LockEngine, channel: string, waiter: Waiter): void {
  const byChannel = readWaiters.get(engine);
  const waiters = byChannel?.get(channel);
  waiters?.delete(waiter);
  if (waiters?.size === 0) byChannel?.delete(channel);
}
function wakeReaders(engine: LockEngine, channel: string): void {
  for (const waiter of readWaiters.get(engine)?.get(channel) ?? []) waiter.notify();
}

/**
 * Redisson's RReadWriteLock: many readers or one writer. Both locks are reentrant per owner (an
 * async context, as for ReentrantLock), the writer may also take the read lock (and keep it after
 * releasing the write lock: a downgrade), and a reader asking for the write lock is refused with
 * LockUpgradeError (it would wait for itself). Every hold has its own lease, renewed by the
 * watchdog, so a dead reader never blocks writers for longer than its lease.
 * Not fair: readers keep entering while a writer waits.
 */
export class ReadWriteLock {
  private readonly read: RwHalf;
  private readonly write: RwHalf;

  constructor(engine: LockEngine, name: string) {
    assertLockName(name);
    this.read = new RwHalf(engine, name, 'read');
    this.write = new RwHalf(engine, name, 'write');
  }

  readLock(): RwHalf {
    return this.read;
  }

  writeLock(): RwHalf {
    return this.write;
  }
}

/** The read or the write lock of a ReadWriteLock. */
export class RwHalf implements Lock {
  constructor(
    private readonly engine: LockEngine,
    readonly name: string,
    readonly mode: Mode,
  ) {}

  get defaultLeaseMs(): number {
    return this.engine.defaultLeaseMs;
  }

  /** Waits up to `waitMs` (default 0). Rejects with LockUpgradeError for a read → write upgrade. */
  tryLock(options: TryLockOptions = {}): Promise<LockHandle | null> {
    const owner = `${this.engine.instanceId}:${currentContextId() ?? randomUUID()}`;
    const channel = this.channel();
    const reader = this.mode === 'read';
    return acquire(
      this.engine,
      this.name,
      {
        kind: this.mode,
        channel,
        sleepCapMs: this.engine.pollMs,
        attempt: async (queued) => {
          const attempt = await this.attempt(owner, options.leaseMs);
          // A writer kept out by readers: the sleeping readers of this process may enter.
          if (queued && !reader && attempt.modeHeld === 'read') wakeReaders(this.engine, channel);
          return attempt;
        },
        joined: (waiter) => reader && readersOf(this.engine, channel).add(waiter),
        left: (waiter, acquired) => {
          if (!reader) return;
          forgetReader(this.engine, channel, waiter);
          // A reader got in after waiting: so may the other sleeping readers of this process.
          if (acquired) wakeReaders(this.engine, channel);
        },
      },
      options,
    );
  }

  lock(options: TryLockOptions = {}): Promise<LockHandle> {
    return lockOrTimeout(this.name, (tryOptions) => this.tryLock(tryOptions), options);
  }

  /**
   * Whether some owner holds this lock now (Redisson's meaning): the write lock while the writer's
   * lease lasts; the read lock while any read hold lasts, the writer's own reads under its write
   * lock included. A hold whose lease ended counts as gone.
   */
  async isLocked(): Promise<boolean> {
    return (await this.held(''))[0] === 1;
  }

  /** Releases the latest hold of this kind taken by the current async context; LockNotHeldError if none. */
  unlock(): Promise<void> {
    const contextId = currentContextId();
    return unlockLatest(this.engine, this.name, contextId ? this.holdId(`${this.engine.instanceId}:${contextId}`) : undefined);
  }

  /** Holds of this kind by the current async context according to Redis (0 once their lease ended). */
  async holdCount(): Promise<number> {
    const contextId = currentContextId();
    if (!contextId) return 0;
    return (await this.held(`${this.engine.instanceId}:${contextId}`))[1];
  }

  private held(owner: string): Promise<[1 | 0, number]> {
    return rwScripts(this.engine.redis).held(rwLockKey(this.name), rwLeasesKey(this.name), this.mode === 'read' ? 'r' : 'w', owner);
  }

  private channel(): string {
    // ioredis prefixes keys but not channels: the channel gets the key prefix from us.
    return `${this.engine.redis.options.keyPrefix ?? ''}rwlock-channel:{${this.name}}`;
  }

  private holdId(owner: string): string {
    return `${this.mode}\u0000${this.name}\u0000${owner}`;
  }

  private async attempt(owner: string, leaseMs: number | undefined): Promise<Attempt & { modeHeld?: Mode }> {
    const { name, mode } = this;
    const lease = leaseMs ?? this.engine.defaultLeaseMs;
    const sentAt = performance.now();
    const scripts = rwScripts(this.engine.redis);
    const reply = await scripts.acquire(rwLockKey(name), rwLeasesKey(name), rwFenceKey(name), owner, mode, lease, fenceTtlMs(lease));
    if (reply[0] === -1) throw new LockUpgradeError(name);
    if (reply[0] === 0) return { handle: null, retryInMs: reply[1], modeHeld: reply[2] };
    const handle = await handleFor(this.engine, {
      id: this.holdId(owner),
      name,
      fencingToken: BigInt(reply[1]),
      reentry: reply[0] === 2,
      backend: this.backend(owner),
      sentAt,
      leaseMs: lease,
      watchdog: leaseMs === undefined,
    });
    return { handle };
  }

  private backend(owner: string): HoldBackend {
    const { name, mode } = this;
    const scripts = rwScripts(this.engine.redis);
    const channel = this.channel();
    return {
      renew: async (leaseMs) => (await scripts.renew(rwLockKey(name), rwLeasesKey(name), rwFenceKey(name), owner, mode, leaseMs, fenceTtlMs(leaseMs))) === 1,
      release: () => scripts.release(rwLockKey(name), rwLeasesKey(name), owner, mode, channel),
    };
  }
}
