/** Longest delay of one Node timer: a longer one fires at once (with a TimeoutOverflowWarning). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A timer that can be longer than MAX_TIMER_MS; cancel() stops it. */
export interface LongTimer {
  cancel(): void;
}

/**
 * setTimeout for any delay (leases may be longer than Node's 24.8-day timer limit): a long delay
 * is chained from timers of at most MAX_TIMER_MS. Unref'ed: it never keeps the process alive.
 */
export function setLongTimeout(fn: () => void, ms: number): LongTimer {
  let timer: NodeJS.Timeout;
  const due = performance.now() + Math.max(0, ms);
  const arm = (): void => {
    const left = due - performance.now();
    timer = setTimeout(left > MAX_TIMER_MS ? arm : fn, Math.max(0, Math.min(left, MAX_TIMER_MS)));
    timer.unref();
  };
  arm();
  return { cancel: () => clearTimeout(timer) };
}

export const TIMED_OUT = Symbol('timed out');

/** The promise's value, its error, or TIMED_OUT after `ms`; never rejects. */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | Error | typeof TIMED_OUT> {
  let timer: LongTimer | undefined;
  const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setLongTimeout(() => resolve(TIMED_OUT), ms);
  });
  const settled = promise.catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
  try {
    return await Promise.race([settled, timeout]);
  } finally {
    timer?.cancel();
  }
}
