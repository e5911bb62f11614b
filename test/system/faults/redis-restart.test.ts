import { describe, expect, it } from 'vitest';
import { redisRestart } from '../../../bench/faults/crash/redis-restart.js';

describe('fault 3: Redis (AOF, appendfsync always) SIGKILLed and restarted during a sale', () => {
  it('recovers stock and buyers from the AOF: no accepted order lost, nothing oversold or doubled, zero drift', async () => {
    const run = await redisRestart.run('appendfsync always', 'test');
    const { figures } = run;
    expect(figures.restartSeconds).toBeGreaterThanOrEqual(1);
    expect(figures.accepted).toBeGreaterThan(0);
    expect(figures.lost).toBe(0);
    expect(figures.duplicates).toBe(0);
    expect(figures.oversold).toBe(0);
    expect(figures.inMysql).toBe(Number(figures.accepted) + Number(figures.acceptedUnanswered));
    expect(figures.driftBefore).toBe(0);
    expect(figures.driftAfter).toBe(0);
    expect(run.checks.filter((check) => !check.pass)).toEqual([]);
  }, 120_000);
});
