import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';

/**
 * Node has no threads, so "the thread that holds a reentrant lock" becomes "the logical operation
 * that holds it": an async context (AsyncLocalStorage) that follows `await`, timers and promise
 * callbacks started inside it, and nothing else. Two requests run in two contexts, so they never
 * share an owner; nested calls of one request share it and can re-enter.
 */
interface LockContext {
  /** Random, so owners stay distinct even if two processes were given the same instance id. */
  readonly id: string;
}

const storage = new AsyncLocalStorage<LockContext>();

/** Id of the current async context, if code runs inside one. */
export const currentContextId = (): string | undefined => storage.getStore()?.id;

/** Runs `fn` in a new context: a new owner, even when called inside another context. */
export function runInNewContext<T>(fn: () => T): T {
  return storage.run({ id: randomUUID() }, fn);
}

/** Runs `fn` in the current context, or in a new one when there is none. */
export function runInSomeContext<T>(fn: () => T): T {
  return storage.getStore() ? fn() : runInNewContext(fn);
}
