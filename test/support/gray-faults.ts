/** What every gray-failure run must show (bench/faults/gray/run-gray-scenario.ts), whatever the fault. */
import { expect } from 'vitest';
import type { FaultRun } from '../../bench/faults/harness/index.js';

export function expectGrayRunKeepsItsPromises(run: FaultRun): void {
  const { figures } = run;
  expect(figures.accepted).toBeGreaterThan(0);
  expect(figures.lost).toBe(0);
  expect(figures.duplicates).toBe(0);
  expect(figures.oversold).toBe(0);
  // Requests retried with their Idempotency-Key after a 503 or no answer never got a second order.
  expect(run.checks.find((check) => check.name === 'a retry is the same order')).toMatchObject({ pass: true });
  // After the drain MySQL holds every accepted order, plus those Redis accepted whose answer was lost.
  expect(figures.inMysql).toBe(Number(figures.accepted) + Number(figures.acceptedUnanswered));
  expect(typeof figures.drainMs).toBe('number');
  expect(figures.other5xx).toBe(0);
  // A stalled dependency gets a fast 503, never a hung request (REQUEST_DEADLINE_MS).
  expect(Number(figures.withinDeadlinePct)).toBeGreaterThanOrEqual(99);
  expect(typeof figures.recoverMs).toBe('number');
  expect(run.checks.filter((check) => !check.pass)).toEqual([]);
}
