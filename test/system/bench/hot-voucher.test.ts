/**
 * `npm run bench -- hot-voucher`'s bucketed sales, smoke-sized (bench/hot-voucher/buckets.ts): on
 * a Redis Cluster of 3 masters + 3 replicas of its own, one voucher sold out from B = 1, 2, 3
 * buckets and from 3 with skewed buyers passes every sale check and reports every figure; a bad
 * option exits 2. Figures are only required to be measured, not to have any size.
 */
import { describe, expect, it } from 'vitest';
import { main, runHotVoucher } from '../../../bench/hot-voucher/index.js';

describe('npm run bench -- hot-voucher, bucketed sales', () => {
  it('sells one voucher out from 1, 2 and 3 buckets on a Cluster, every check passing, every figure reported', { timeout: 120_000 }, async () => {
    const stock = 3_000;
    const report = await runHotVoucher({ seconds: 0.3, connections: 4, inFlight: 64, stock, buckets: [1, 2, 3], oneCore: false }, 'test');

    expect(report.rows).toEqual([]);
    expect(report.bucketed.map((row) => [row.buckets, row.buyers])).toEqual([
      [1, 'even'],
      [2, 'even'],
      [3, 'even'],
      [3, 'skewed'],
    ]);
    for (const row of report.bucketed) {
      const label = `B = ${row.buckets}, ${row.buyers}`;
      expect(row.checks.map((check) => check.name)).toEqual([
        'units conserved, none oversold',
        'every unit sold',
        'no false sold out',
        'every accepted order queued, each buyer once',
        'nothing pending',
      ]);
      expect(
        row.checks.filter((check) => !check.pass),
        label,
      ).toEqual([]);
      expect(row.pass).toBe(true);
      expect(row.accepted).toBe(stock);
      expect(row.masters).toHaveLength(3);
      // Each bucket on a master of its own, every master's CPU read.
      expect(row.masters.flatMap((master) => master.buckets).sort()).toEqual(Array.from({ length: row.buckets }, (_, index) => index));
      expect(row.masters.filter((master) => master.buckets.length > 0)).toHaveLength(row.buckets);
      for (const master of row.masters) expect(master.microsPerOrder, label).toBeGreaterThanOrEqual(0);
      expect(Number.isFinite(row.projectedCeiling) && row.projectedCeiling > 0, label).toBe(true);
      expect(row.ceilingVsOneBucket, label).toBeGreaterThan(0);
      expect(row.reservesPerOrder, label).toBeGreaterThanOrEqual(1);
      expect(row.ordersPerScriptRun, label).toBeGreaterThanOrEqual(1);
      expect(row.refillsPer1000, label).toBeGreaterThanOrEqual(0);
      expect(row.lastPercent.units).toBe(stock / 100);
      expect(row.lastPercent.requests, label).toBeGreaterThanOrEqual(row.lastPercent.units);
      expect(row.lastPercent.ms, label).toBeGreaterThanOrEqual(0);
    }
    expect(report.bucketed[0]!.ceilingVsOneBucket).toBe(1);
    expect(report.bucketed[0]!.refillsPer1000).toBe(0);
    // Nine buyers in ten homing to bucket 0 of 3, which holds a third of the stock: every unit sold
    // (checked above) means units moved to it.
    expect(report.bucketed[3]!.refillsPer1000).toBeGreaterThan(0);
    expect(report.pass).toBe(true);
  });

  it('refuses a B the Cluster has no masters for, with exit code 2', async () => {
    expect(await main(['--buckets', '1,4'])).toBe(2);
  });
});
