/**
 * The `seckill-semaphore` scenario (gulimall's design, bench/scenarios/seckill-semaphore.ts): a smoke run
 * passes every check, and buys dropped between the permit and the order make its no-undersell
 * check fail, while oversell and one-per-user still hold.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseBenchOptions, type BenchOptions } from '../../../bench/harness/index.js';
import { Progress } from '../../../bench/reports/index.js';
import { runBench } from '../../../bench/run.js';
import { testMysqlUrl, testRedisUrl } from '../../../kit/services.js';

const quiet = new Progress(process.stderr, true);

function smokeOptions(): BenchOptions {
  const options = parseBenchOptions(['--smoke', '--scenarios', 'seckill-semaphore'], { REDIS_URL: testRedisUrl(), MYSQL_SERVER_URL: testMysqlUrl() });
  if (options === 'help') throw new Error('unexpected help');
  return options;
}

const verdicts = (checks: Array<{ name: string; pass: boolean }>): Record<string, boolean> =>
  Object.fromEntries(checks.map((check) => [check.name, check.pass]));

afterEach(() => {
  delete process.env.BENCH_GULIMALL_CRASH_RATE;
});

describe('seckill-semaphore (gulimall) through the sale checks', () => {
  it('is run only when named, and passes every check without faults', { timeout: 240_000 }, async () => {
    expect(parseBenchOptions(['--smoke'], {})).toMatchObject({ scenarios: expect.not.arrayContaining(['seckill-semaphore']) as unknown });
    const report = await runBench(smokeOptions(), quiet);
    const [sale] = report.seckill;
    expect(sale?.strategy).toBe('semaphore');
    expect(sale?.accepted).toBeGreaterThan(0);
    expect(verdicts(sale!.checks)).toMatchObject({
      'no oversell': true,
      'no user twice': true,
      'no undersell': true,
      'every unit sold': true,
      'no false sold out': true,
    });
    expect(report.pass).toBe(true);
  });

  it('undersells when buys die between the permit and the order, and the check says so', { timeout: 240_000 }, async () => {
    process.env.BENCH_GULIMALL_CRASH_RATE = '0.2'; // read by the bench server process it starts
    const report = await runBench(smokeOptions(), quiet);
    const [sale] = report.seckill;
    expect(verdicts(sale!.checks)).toMatchObject({ 'no oversell': true, 'no user twice': true, 'no undersell': false });
    expect(sale!.checks.find((check) => check.name === 'no undersell')?.detail).toMatch(/[1-9]\d* with permits taken but no order/);
    expect(report.pass).toBe(false);
  });
});
