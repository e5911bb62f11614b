/** Cleanups that run whatever happened, so that a failed run leaves no process or database behind. */
/** Runs `body`, then `cleanups` in reverse order whatever happened (each one even if another failed). */
export async function withCleanup<T>(body: (defer: (cleanup: () => Promise<unknown>) => void) => Promise<T>): Promise<T> {
  const cleanups: Array<() => Promise<unknown>> = [];
  try {
    return await body((cleanup) => cleanups.push(cleanup));
  } finally {
    const errors: unknown[] = [];
    for (const cleanup of cleanups.reverse()) {
      try {
        await cleanup();
      } catch (error) {
        errors.push(error);
      }
    }
    if (errors.length > 0) console.error('fault harness: cleanup failed:', ...errors);
  }
}
