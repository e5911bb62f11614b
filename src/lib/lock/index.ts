export { LockClient, type LockClientOptions } from './lock-client.js';
export { ReentrantLock, SimpleLock } from './redis-lock.js';
export { MultiLock, RedLock, type MultiLockHandle, type MultiLockOptions } from './multi-lock.js';
export { LockClientClosedError, LockLostError, LockNotHeldError, LockTimeoutError, LockUpgradeError } from './errors.js';
export { fenceKey, lockKey } from './engine.js';
export type { Lock, LockHandle, LockObserver, LockWaitEvent, RedisClient, TryLockOptions } from './types.js';
export { FairLock, fairQueueKey, fairWaitersKey, type FairLockOptions } from './fair-lock.js';
export { ReadWriteLock, RwHalf, rwFenceKey, rwLeasesKey, rwLockKey } from './read-write-lock.js';
