import { describe, expect, it } from 'vitest';
import { redisLatency } from '../../../bench/faults/gray/redis-latency.js';
import { expectGrayRunKeepsItsPromises } from '../../support/gray-faults.js';

describe('gray fault: Redis replies 100 ± 50 ms late for 4 s during a sale', () => {
  it('keeps selling within the deadline, loses and doubles nothing, and is back to normal after', async () => {
    const run = await redisLatency.run(redisLatency.variants[0]!, 'test');
    expect(run.figures.faultSeconds).toBeGreaterThanOrEqual(4);
    expect(run.figures.accepted).toBeGreaterThan(0);
    expect(Number(run.figures.p99DuringMs)).toBeGreaterThan(Number(run.figures.p99BeforeMs)); // the toxic was really there
    expectGrayRunKeepsItsPromises(run);
  }, 120_000);
});
