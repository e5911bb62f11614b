import { describe, expect, it } from 'vitest';
import { bandwidthLimit } from '../../../bench/faults/gray/bandwidth-limit.js';
import { expectGrayRunKeepsItsPromises } from '../../support/gray-faults.js';

describe('gray fault: app ↔ Redis limited to 32 KiB/s per connection for 4 s during a sale', () => {
  it('sheds with 503 rather than hanging, loses and doubles nothing, recovers once the limit goes', async () => {
    const run = await bandwidthLimit.run(bandwidthLimit.variants[0]!, 'test');
    expect(run.figures.faultSeconds).toBeGreaterThanOrEqual(4);
    // The limit bit: less went to Redis during the fault than before it (the order requests are the
    // larger direction), or, where the short test load stays under the limit's total, answers slowed.
    const toRedis = (figure: string | number | undefined) => Number(String(figure).split(' / ')[0]);
    const lessToRedis = toRedis(run.figures.redisKibPerSecondDuring) < toRedis(run.figures.redisKibPerSecondBefore);
    const slower = Number(run.figures.p99DuringMs) > 2 * Number(run.figures.p99BeforeMs);
    expect(lessToRedis || slower, `the limit left no mark: ${JSON.stringify(run.figures)}`).toBe(true);
    expectGrayRunKeepsItsPromises(run);
  }, 120_000);
});
