import { describe, expect, it } from 'vitest';
import { mysqlOutage } from '../../../bench/faults/crash/mysql-outage.js';

describe('fault 4: MySQL unreachable for 10 s during a sale (a proxy cut, never the shared server)', () => {
  it('keeps accepting into the stream, dead-letters nothing, catches up, loses and doubles nothing', async () => {
    const run = await mysqlOutage.run(mysqlOutage.variants[0]!, 'test');
    const { figures } = run;
    expect(figures.outageSeconds).toBeGreaterThanOrEqual(10);
    expect(figures.acceptedDuringOutage).toBeGreaterThan(0);
    expect(figures.non2xxNamingMysql).toBe(0); // the order path never needs MySQL
    expect(figures.lost).toBe(0);
    expect(figures.duplicates).toBe(0);
    expect(figures.oversold).toBe(0);
    expect(figures.inMysql).toBe(figures.accepted);
    expect(typeof figures.caughtUpMs).toBe('number');
    // The circuit breaker opens after 5 failed MySQL calls; then one probe at a time, backing off
    // from 0.5 s: a few calls a second per instance at most, whatever the backlog (a loop paced
    // by the backlog made about 100 a second at a backlog of 1,000, a tight loop tens of thousands).
    expect(Number(figures.workerMysqlAttempts)).toBeGreaterThan(0);
    expect(Number(figures.workerMysqlAttemptsPerSecond)).toBeLessThan(5);
    expect(Number(figures.workerFailuresPerSecond)).toBeLessThan(5);
    expect(run.checks.filter((check) => !check.pass)).toEqual([]);
  }, 150_000);
});
