import { describe, expect, it } from 'vitest';
import { mysqlStall } from '../../../bench/faults/gray/mysql-stall.js';
import { expectGrayRunKeepsItsPromises } from '../../support/gray-faults.js';

describe('gray fault: MySQL stalled (every byte held, nothing reset) for 4 s during a sale', () => {
  it('keeps accepting orders (the order path needs no MySQL), writes the backlog once MySQL answers, loses and doubles nothing', async () => {
    const run = await mysqlStall.run(mysqlStall.variants[0]!, 'test');
    expect(run.figures.faultSeconds).toBeGreaterThanOrEqual(4);
    expect(run.figures.answered503).toBe(0);
    expectGrayRunKeepsItsPromises(run);
  }, 120_000);
});
