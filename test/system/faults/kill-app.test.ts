import { describe, expect, it } from 'vitest';
import { killApp } from '../../../bench/faults/crash/kill-app.js';

describe('fault 1: SIGKILL one of three app instances during a sale', () => {
  it("every accepted order lands in MySQL once; the dead worker's pending entries are taken over; no oversell", async () => {
    const run = await killApp.run(killApp.variants[0]!, 'test');
    const { figures } = run;
    expect(figures.accepted).toBeGreaterThan(0);
    expect(figures.lost).toBe(0);
    expect(figures.duplicates).toBe(0);
    expect(figures.oversold).toBe(0);
    // Orders in MySQL = the answered ones + the ones accepted by Redis whose answer died with the instance.
    expect(figures.inMysql).toBe(Number(figures.accepted) + Number(figures.acceptedUnanswered));
    expect(Number(figures.acceptedUnanswered)).toBeLessThanOrEqual(Number(figures.unanswered));
    expect(figures.pendingOnVictim).toBeGreaterThan(0);
    expect(Number(figures.takeOvers)).toBeGreaterThanOrEqual(Number(figures.pendingOnVictim));
    expect(run.checks.filter((check) => !check.pass)).toEqual([]);
  }, 120_000);
});
