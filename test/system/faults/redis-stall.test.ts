import { describe, expect, it } from 'vitest';
import { redisStall } from '../../../bench/faults/gray/redis-stall.js';
import { expectGrayRunKeepsItsPromises } from '../../support/gray-faults.js';

describe('gray fault: Redis stalled (every byte held, nothing reset) for 4 s during a sale', () => {
  it('answers 503 within the deadline rather than hanging, loses and doubles nothing, and recovers once Redis answers', async () => {
    const run = await redisStall.run(redisStall.variants[0]!, 'test');
    expect(run.figures.faultSeconds).toBeGreaterThanOrEqual(4);
    expectGrayRunKeepsItsPromises(run);
  }, 120_000);
});
