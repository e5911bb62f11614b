/** Polling for a state the cluster or the instances reach by themselves. */
import { setTimeout as sleep } from 'node:timers/promises';

/** True once `check` holds, false after `timeoutMs`. */
export async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) return false;
    await sleep(100);
  }
  return true;
}
