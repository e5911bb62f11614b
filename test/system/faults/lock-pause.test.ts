import { afterAll, describe, expect, it } from 'vitest';
import { lockPause } from '../../../bench/faults/crash/lock-pause.js';
import { killFixtures } from '../../../kit/children.js';

afterAll(() => killFixtures());

describe('fault 5: a lock holder SIGSTOPped past its lease', () => {
  it('loses the lock to a second process, and its late write with the old fencing token is rejected', async () => {
    const run = await lockPause.run(lockPause.variants[0]!, 'test');
    const { figures } = run;
    expect(Number(figures.pauseMs)).toBeGreaterThanOrEqual(2 * Number(figures.leaseMs));
    expect(Number(figures.takeoverMs)).toBeLessThan(Number(figures.pauseMs));
    expect(BigInt(figures.newToken!)).toBeGreaterThan(BigInt(figures.staleToken!));
    expect(figures.writesAccepted).toBe(1);
    expect(figures.writesRejected).toBe(1);
    expect(figures.finalValue).toBe('second');
    expect(run.checks.filter((check) => !check.pass)).toEqual([]);
  }, 60_000);
});
