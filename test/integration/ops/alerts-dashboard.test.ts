import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricNames } from '../../support/promql.js';
import { buildTestApp, createTestEnv, metricsAuth, type TestEnv } from '../../support/test-env.js';

/**
 * The operations kit in ops/: the Prometheus alert rules pass `promtool check rules` and their
 * unit tests, and every series the rules and the Grafana dashboard name is one a real app
 * instance exposes at /metrics (a renamed metric would leave a silent alert or an empty panel).
 */
const repo = fileURLToPath(new URL('../../..', import.meta.url));
const rulesFile = 'ops/prometheus/alerts.yml';
const dashboardFile = 'ops/grafana/hmdp.json';

/** Series Prometheus makes up itself rather than scrapes. */
const SYNTHETIC = new Set(['up']);
/** A histogram's _bucket, _count and _sum series are declared under its base name. */
const baseName = (series: string) => series.replace(/_(bucket|count|sum)$/, '');

function ruleExpressions(): string[] {
  return [...readFileSync(`${repo}/${rulesFile}`, 'utf8').matchAll(/^\s*expr:\s*(.+)$/gm)].map((match) => match[1] ?? '');
}

function dashboardExpressions(): string[] {
  const dashboard = JSON.parse(readFileSync(`${repo}/${dashboardFile}`, 'utf8')) as { panels: Array<{ targets: Array<{ expr: string }> }> };
  return dashboard.panels.flatMap((panel) => panel.targets.map((target) => target.expr));
}

describe('metricNames', () => {
  it('finds the series of an expression and leaves out functions, keywords, labels and ranges', () => {
    expect(metricNames('histogram_quantile(0.99, sum by (le, route) (rate(http_request_duration_seconds_bucket{status=~"5.."}[5m])))')).toEqual([
      'http_request_duration_seconds_bucket',
    ]);
    expect(metricNames('sum(a_total) / sum(b{x="sum(c)"}) > 0 and deriv((sum(c_lag))[10m:1m]) > 0')).toEqual(['a_total', 'b', 'c_lag']);
  });
});

describe('alert rules', () => {
  beforeAll(() => {
    execFileSync('bash', ['scripts/promtool.sh'], { cwd: repo, stdio: 'inherit' }); // Debian package prometheus, when missing
  }, 300_000);

  it('pass promtool check rules', () => {
    const out = execFileSync('promtool', ['check', 'rules', rulesFile], { cwd: repo, encoding: 'utf8' });
    expect(out).toContain(`SUCCESS: ${ruleExpressions().length} rules found`);
  });

  it('pass their unit tests (promtool test rules)', () => {
    const out = execFileSync('promtool', ['test', 'rules', 'ops/prometheus/alerts.test.yml'], { cwd: repo, encoding: 'utf8' });
    expect(out).toContain('SUCCESS');
  });
});

describe('every series the alert rules and the dashboard name', () => {
  let env: TestEnv;
  let app: FastifyInstance;

  beforeAll(async () => {
    env = await createTestEnv();
    ({ app } = await buildTestApp(env));
  });

  afterAll(async () => {
    await app?.close();
    await env?.cleanup();
  });

  it('is declared in a scrape of /metrics', async () => {
    const response = await app.inject({ url: '/metrics', headers: metricsAuth });
    expect(response.statusCode).toBe(200);
    const declared = new Set([...response.body.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]));

    const rules = ruleExpressions();
    const panels = dashboardExpressions();
    expect(rules.length).toBeGreaterThanOrEqual(8);
    expect(panels.length).toBeGreaterThanOrEqual(10);
    const named = new Set([...rules, ...panels].flatMap(metricNames));
    // The list: throughput, refusals, lag, dead letters, latency, cache, locks, breaker, replica acks.
    for (const series of ['seckill_requests_total', 'seckill_consumer_lag', 'seckill_dead_letters', 'http_request_duration_seconds_bucket']) {
      expect(named).toContain(series);
    }
    for (const series of ['cache_requests_total', 'lock_wait_seconds_bucket', 'seckill_worker_breaker_state', 'seckill_replica_ack_timeouts_total']) {
      expect(named).toContain(series);
    }
    const missing = [...named].filter((series) => !SYNTHETIC.has(series) && !declared.has(baseName(series)));
    expect(missing).toEqual([]);
  });
});
