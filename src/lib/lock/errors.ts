/** `lock()` / `withLock()` waited `waitMs` without getting the lock. */
export class LockTimeoutError extends Error {
  override readonly name = 'LockTimeoutError';
  constructor(
    readonly lockName: string,
    readonly waitMs: number,
  ) {
    super(`Could not acquire lock "${lockName}" within ${waitMs} ms`);
  }
}

/** The reason of a handle's aborted signal: the holder must stop relying on the lock. */
export class LockLostError extends Error {
  override readonly name = 'LockLostError';
  constructor(
    readonly lockName: string,
    readonly why: string,
  ) {
    super(`Lock "${lockName}" lost: ${why}`);
  }
}

/** `unlock()` was called from an async context that does not hold the lock. */
export class LockNotHeldError extends Error {
  override readonly name = 'LockNotHeldError';
  constructor(readonly lockName: string) {
    super(`Lock "${lockName}" is not held by the current async context`);
  }
}

/** The LockClient was closed: no new acquisitions, waiting calls are rejected. */
export class LockClientClosedError extends Error {
  override readonly name = 'LockClientClosedError';
  constructor() {
    super('LockClient is closed');
  }
}

/** A read-write lock's owner asked for the write lock while holding only the read lock. */
export class LockUpgradeError extends Error {
  override readonly name = 'LockUpgradeError';
  constructor(readonly lockName: string) {
    super(`Read lock "${lockName}" is held by this owner: taking the write lock would wait forever (release the read lock first)`);
  }
}

/** A simple (non-reentrant) lock was asked for, with a wait, by the async context that holds it. */
export class LockReentryError extends Error {
  override readonly name = 'LockReentryError';
  constructor(readonly lockName: string) {
    super(`Simple lock "${lockName}" is already held by the current async context: it is not reentrant, so waiting for it would wait for itself`);
  }
}

/** A semaphore's `acquire()` waited `waitMs` without getting its permits. */
export class PermitTimeoutError extends Error {
  override readonly name = 'PermitTimeoutError';
  constructor(
    readonly semaphoreName: string,
    readonly permits: number,
    readonly waitMs: number,
  ) {
    super(`Could not acquire ${permits} permit(s) of semaphore "${semaphoreName}" within ${waitMs} ms`);
  }
}
