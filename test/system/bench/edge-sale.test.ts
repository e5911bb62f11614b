/**
 * The sale through the edge (bench/scenarios/edge-sale.ts), in a smoke run of its own: not in the
 * default set (each scenario starts an app, three of them an nginx too). Only that the pairs run,
 * answer what they promise and report: never their rates or the targets' verdicts.
 */
import { describe, expect, it } from 'vitest';
import { parseBenchOptions, type BenchOptions } from '../../../bench/harness/index.js';
import { Progress, renderMarkdown } from '../../../bench/reports/index.js';
import { runBench } from '../../../bench/run.js';
import { testMysqlUrl, testRedisUrl } from '../../../kit/services.js';

const PAIRS = 'app-sold-out,edge-sold-out,proxy-order,edge-order';
const quiet = new Progress(process.stderr, true);

function smokeOptions(...extra: string[]): BenchOptions {
  const options = parseBenchOptions(['--smoke', ...extra], { REDIS_URL: testRedisUrl(), MYSQL_SERVER_URL: testMysqlUrl() });
  if (options === 'help') throw new Error('unexpected help');
  return options;
}

describe(`npm run bench --scenarios ${PAIRS} --smoke`, () => {
  it('runs them only when named, never against a deployment', () => {
    expect(smokeOptions().scenarios.filter((name) => PAIRS.split(',').includes(name))).toEqual([]);
    // Named in any order, they run in the order of their pairs.
    expect(smokeOptions('--scenarios', 'edge-order,edge-sold-out,proxy-order,app-sold-out').scenarios).toEqual(PAIRS.split(','));
    expect(() => parseBenchOptions(['--target', 'http://127.0.0.1:1', '--scenarios', 'edge-sold-out'], {})).toThrow(/edge-sold-out need/);
  });

  it("measures each pair, nginx's CPU counted for the edge's scenarios, and judges it", { timeout: 240_000 }, async () => {
    const report = await runBench(smokeOptions('--scenarios', PAIRS), quiet);

    const results = report.edgeSale ?? [];
    expect(results.map((result) => result.scenario)).toEqual(PAIRS.split(','));
    for (const result of results) {
      expect(result.checks.filter((check) => !check.pass)).toEqual([]);
      expect(result.saturation.rps).toBeGreaterThan(0);
      expect(result.slices.length).toBeGreaterThanOrEqual(3);
      expect(result.saturation.errors + result.fixedRate.errors).toBe(0);
      expect(result.measuredRequests).toBeGreaterThan(0);
    }
    const [appSoldOut, edgeSoldOut, proxyOrder, edgeOrder] = results;
    // wrk saturates the sold-out pair (its answers counted through the source all the same, above), autocannon the order pair.
    expect([appSoldOut, edgeSoldOut, proxyOrder, edgeOrder].map((result) => result!.saturation.generator)).toEqual(['wrk', 'wrk', 'autocannon', 'autocannon']);
    // Every answer the promised one, over the whole run.
    expect(Object.keys(appSoldOut!.answers)).toEqual(['the app\'s "Sold out"']);
    expect(Object.keys(edgeSoldOut!.answers)).toEqual(['the app\'s "Sold out"']);
    expect(Object.keys(proxyOrder!.answers)).toEqual(['accepted']);
    expect(Object.keys(edgeOrder!.answers)).toEqual(['accepted']);
    // The app answers its own refusals (what the edge passed on is a figure: it passes on whatever
    // its view cannot confirm fresh), and every order (the order pair's check, above).
    expect(appSoldOut!.reachedApp).toBeGreaterThanOrEqual(appSoldOut!.measuredRequests);
    expect(edgeOrder!.checks.map((check) => check.name)).toContain('every accepted order answered by the app');
    // nginx's ticks (10 ms) over all slices: only the targets behind an nginx count one.
    const nginxMicros = (result: NonNullable<typeof appSoldOut>) => result.slices.reduce((sum, slice) => sum + slice.cpu!.nginx * slice.requests, 0);
    expect(appSoldOut!.slices.every((slice) => slice.cpu!.nginx === 0)).toBe(true);
    for (const behindNginx of [edgeSoldOut!, proxyOrder!, edgeOrder!]) expect(nginxMicros(behindNginx)).toBeGreaterThan(0);
    expect(report.pass).toBe(true);

    expect(report.targets.map((target) => target.name)).toEqual([
      'app-sold-out / edge-sold-out, app + Redis + nginx CPU µs per request',
      'edge-order / proxy-order, app + Redis + nginx CPU µs per request',
    ]);
    expect(report.targets.every((target) => target.verdict === 'met' || /^missed by \d+ %$/.test(target.verdict))).toBe(true);

    const markdown = renderMarkdown(report);
    expect(markdown).toMatch(/\| edge-sold-out \| the edge's nginx: its view of the sale \| [\d,.]+ \([\d,.]+–[\d,.]+\) \| [\d,.]+ \(/);
    expect(markdown).toMatch(/\| edge-sold-out \| .* \| [\d,.]+× \([\d,.]+–[\d,.]+\) cheaper than app-sold-out \| [\d,]+ of [\d,]+ \([\d.]+ %\) \|/);
    expect(markdown).toMatch(/\| edge-order \| .* \| [\d,.]+× \([\d,.]+–[\d,.]+\) proxy-order \| – \(one app behind the pair\) \|/);
    expect(markdown).toContain('- edge-sold-out: PASS every answer the app\'s "Sold out"');
    expect(markdown).toMatch(/\| edge-sold-out \| .* \| wrk [\d,.]+ \([\d,.]+–[\d,.]+\) \| [\d,.]+× /);
  });
});
