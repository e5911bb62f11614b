import { describe, expect, it } from 'vitest';
import { bandwidthLimit } from '../../../bench/faults/bandwidth-limit.js';
import { expectGrayRunKeepsItsPromises } from '../../support/gray-faults.js';

describe('gray fault: app ↔ Redis limited to 32 KiB/s per connection for 6 s during a sale', () => {
  it('sheds with 503 rather than hanging, loses and doubles nothing, recovers once the limit goes', async () => {
    const run = await bandwidthLimit.run(bandwidthLimit.variants[0]!, 'test');
    expect(run.figures.faultSeconds).toBeGreaterThanOrEqual(6);
    expect(Number(run.figures.redisKbPerSecondDuring)).toBeLessThan(32 * 4); // the limit held (per connection, a few connections per instance)
    expectGrayRunKeepsItsPromises(run);
  }, 60_000);
});
