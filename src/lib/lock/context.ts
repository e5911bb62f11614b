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

/**
 * Contexts whose function is still running. On Node 20, AsyncLocalStorage works through promise
 * hooks that, once its first run() enables them, run for every promise the process makes (about
 * twice the cost of each await) until disable(). So the storage is disabled whenever no context
 * runs: code that never takes a reentrant lock (a cached read, the async order path) pays
 * nothing, however many locks ran before.
 */
let running = 0;

/** Id of the current async context, if code runs inside one. */
export const currentContextId = (): string | undefined => storage.getStore()?.id;

/**
 * Runs `fn` in a new context: a new owner, even when called inside another context. The context
 * lasts until `fn` (or the promise it returns) settles; work it starts and does not wait for
 * belongs to no context once every context has ended.
 */
export function runInNewContext<T>(fn: () => T): T {
  running += 1;
  let result: T;
  try {
    result = storage.run({ id: randomUUID() }, fn);
  } catch (error) {
    leave();
    throw error;
  }
  if (result instanceof Promise) return result.finally(leave) as T;
  leave();
  return result;
}

/** Runs `fn` in the current context, or in a new one when there is none. */
export function runInSomeContext<T>(fn: () => T): T {
  return storage.getStore() ? fn() : runInNewContext(fn);
}

function leave(): void {
  running -= 1;
  if (running === 0) storage.disable();
}
