import { describe, expect, it } from 'vitest';
import { mysqlOutage } from '../../../bench/faults/mysql-outage.js';

describe('fault 4: MySQL unreachable for 10 s during a sale (a proxy cut, never the shared server)', () => {
  it('keeps accepting into the stream, dead-letters nothing, catches up, loses and doubles nothing', async () => {
    const run = await mysqlOutage.run(mysqlOutage.variants[0]!, 'test');
    const { figures } = run;
    expect(figures.outageSeconds).toBeGreaterThanOrEqual(10);
    expect(figures.acceptedDuringOutage).toBeGreaterThan(0);
    expect(figures.non2xx).toBe(0); // the order path never needs MySQL
    expect(figures.lost).toBe(0);
    expect(figures.duplicates).toBe(0);
    expect(figures.oversold).toBe(0);
    expect(figures.inMysql).toBe(figures.accepted);
    expect(typeof figures.caughtUpMs).toBe('number');
    // Retries are paced (each pending entry about once a second), not a tight loop: generous bound
    // of 400 failure log lines a second per instance (a tight loop makes tens of thousands).
    expect(Number(figures.workerFailuresPerSecond)).toBeLessThan(400);
    expect(run.checks.filter((check) => !check.pass)).toEqual([]);
  }, 150_000);
});
