import { describe, expect, it } from 'vitest';
import { saleControls } from '../../../bench/faults/sale-controls.js';

describe('an administrator pauses, resumes, tops up, lowers and ends a sale under load across three instances', () => {
  it('keeps every promise of the sale, and the buyers are told "paused" while paused and "ended" after the end', async () => {
    const run = await saleControls.run(saleControls.variants[0]!, 'test');
    const { figures } = run;
    expect(figures.accepted).toBeGreaterThan(0);
    expect(figures.lost).toBe(0);
    expect(figures.duplicates).toBe(0);
    expect(figures.oversold).toBe(0);
    expect(figures.inMysql).toBe(figures.accepted);
    expect(figures.refusedPaused).toBeGreaterThan(0);
    expect(figures.refusedEnded).toBeGreaterThan(0);
    expect(run.checks.filter((check) => !check.pass)).toEqual([]);
  }, 90_000);
});
