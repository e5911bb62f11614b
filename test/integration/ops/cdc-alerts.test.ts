import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCdcMetrics } from '../../../src/modules/cdc/cdc-metrics.js';
import { metricNames } from '../../support/promql.js';

/**
 * The change follower's alert rules (ops/prometheus/cdc-alerts.yml): they pass promtool's check
 * and unit tests, and every series they name is one the follower declares (a renamed metric
 * would leave a silent alert).
 */
const repo = fileURLToPath(new URL('../../..', import.meta.url));
const rulesFile = 'ops/prometheus/cdc-alerts.yml';

const ruleExpressions = (): string[] => [...readFileSync(`${repo}/${rulesFile}`, 'utf8').matchAll(/^\s*expr:\s*(.+)$/gm)].map((match) => match[1] ?? '');

describe('change follower alert rules', () => {
  beforeAll(() => {
    execFileSync('bash', ['scripts/promtool.sh'], { cwd: repo, stdio: 'inherit' }); // Debian package prometheus, when missing
  }, 300_000);

  it('pass promtool check rules and their unit tests', () => {
    expect(execFileSync('promtool', ['check', 'rules', rulesFile], { cwd: repo, encoding: 'utf8' })).toContain(
      `SUCCESS: ${ruleExpressions().length} rules found`,
    );
    expect(execFileSync('promtool', ['test', 'rules', 'ops/prometheus/cdc-alerts.test.yml'], { cwd: repo, encoding: 'utf8' })).toContain('SUCCESS');
  });

  it('name only series the follower declares', async () => {
    const registry = new Registry();
    createCdcMetrics(registry);
    const declared = new Set([...(await registry.metrics()).matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]));
    const named = new Set(ruleExpressions().flatMap(metricNames));
    expect(named).toContain('cdc_lag_seconds_bucket');
    expect([...named].filter((series) => !declared.has(series.replace(/_(bucket|count|sum)$/, '')))).toEqual([]);
  });
});
