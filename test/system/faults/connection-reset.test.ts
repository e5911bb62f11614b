import { describe, expect, it } from 'vitest';
import { connectionReset } from '../../../bench/faults/gray/connection-reset.js';
import { expectGrayRunKeepsItsPromises } from '../../support/gray-faults.js';

describe('gray fault: every Redis and MySQL connection reset once a second for 4 s during a sale', () => {
  it('loses, doubles and oversells nothing; every order Redis accepted is in MySQL once; recovers', async () => {
    const run = await connectionReset.run(connectionReset.variants[0]!, 'test');
    expect(Number(run.figures.redisResets)).toBeGreaterThan(6); // the connections were really reset, repeatedly
    expect(Number(run.figures.mysqlResets)).toBeGreaterThan(6);
    expectGrayRunKeepsItsPromises(run);
  }, 120_000);
});
