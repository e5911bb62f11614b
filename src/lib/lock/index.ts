export { LockClient, type LockClientOptions } from './lock-client.js';
export { ReentrantLock, SimpleLock } from './redis-lock.js';
export { MultiLock, RedLock, type MultiLockHandle, type MultiLockOptions } from './multi-lock.js';
export { LockClientClosedError, LockLostError, LockNotHeldError, LockTimeoutError } from './errors.js';
export { LockReentryError } from './errors.js';
export { fenceKey, lockKey } from './engine.js';
export { MAX_LEASE_MS } from './engine.js';
export type { Lock, LockHandle, LockObserver, LockWaitEvent, RedisClient, TryLockOptions } from './types.js';
