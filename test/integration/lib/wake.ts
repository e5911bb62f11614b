import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import type { Lock } from '../../../src/lib/lock/index.js';

/**
 * Holds `holderLock`, lets `waiterLock` (same name, a client polling every 10 s) wait, releases,
 * and checks the waiter got the lock within a second: woken by pub/sub, not by its poll.
 */
export async function expectWaiterWokenByRelease(holderLock: Lock, waiterLock: Lock): Promise<void> {
  const holder = await holderLock.lock({ leaseMs: 20_000 });
  const waiting = waiterLock.tryLock({ waitMs: 8_000, leaseMs: 5_000 });
  await sleep(300);
  const releasedAt = Date.now();
  await holder.release();
  const handle = await waiting;
  expect(handle).not.toBeNull();
  expect(Date.now() - releasedAt).toBeLessThan(1_000);
  await handle!.release();
}
