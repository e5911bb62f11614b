import { vi } from 'vitest';

/**
 * Runs `check` (assertions) every 50 ms until it passes, and fails with its last error after
 * `timeoutMs`: for what a background job (the order worker, a flush) makes true a little later.
 * Unlike `expect.poll`, it also works in hooks and takes a block of assertions.
 */
export function eventually<T>(check: () => T | Promise<T>, timeoutMs = 20_000): Promise<T> {
  return vi.waitFor(check, { timeout: timeoutMs, interval: 50 });
}
