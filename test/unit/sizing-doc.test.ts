import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { COSTS, type CostFigure, type CostTable } from '../../scripts/sizing-costs.js';
import {
  DEFAULTS,
  SIZING_DOC,
  UsageError,
  coresOf,
  median,
  parseSale,
  planningMicros,
  renderBlock,
  renderProjection,
  saleLoads,
  saleTraffic,
  withBlock,
  type Sale,
} from '../../scripts/sizing.js';

const sale = (overrides: Partial<Sale>): Sale => ({ ...DEFAULTS, ...overrides });

describe('docs/sizing.md', () => {
  it('holds what npm run sizing -- --write writes (the figures and the worked examples)', () => {
    const doc = readFileSync(SIZING_DOC, 'utf8');
    expect(doc, 'docs/sizing.md is stale: run npm run sizing -- --write').toBe(withBlock(doc));
    expect(doc).toContain(renderBlock());
  });
});

describe('npm run sizing: the traffic of a sale', () => {
  it('accepts min(units, buyers); refuses the other buyers and each of their retries; reads the page once plus the refreshes', () => {
    expect(saleTraffic(sale({ units: 1_000, buyers: 200_000, retries: 2, refreshes: 3 }))).toEqual({
      accepted: 1_000,
      refusals: 199_000 * 3,
      reads: 200_000 * 4,
    });
    expect(saleTraffic(sale({ units: 500, buyers: 300, retries: 5 }))).toEqual({ accepted: 300, refusals: 0, reads: 600 });
  });

  it('with the edge, refusals and reads never reach the app, and a refusal costs Redis nothing', () => {
    const loads = saleLoads(sale({ edge: true }));
    const appCosts = loads.filter((load) => load.tier === 'app').map((load) => load.cost);
    expect(appCosts).toEqual(['appAccepted']);
    expect(loads.map((load) => load.cost)).not.toContain('redisRefusal');
    expect(loads.find((load) => load.cost === 'edgeRefusal')?.perSecond).toBe(saleTraffic(DEFAULTS).refusals / DEFAULTS.seconds);
  });

  it('without the edge, every request passes the proxy and reaches the app, each refusal with its session lookup', () => {
    const off = sale({ edge: false });
    const traffic = saleTraffic(off);
    const loads = saleLoads(off);
    const perSecond = (cost: string) => loads.find((load) => load.cost === cost)?.perSecond;
    expect(perSecond('proxyPass')).toBe((traffic.accepted + traffic.refusals + traffic.reads) / off.seconds);
    expect(perSecond('appRefusal')).toBe(traffic.refusals / off.seconds);
    expect(perSecond('redisRefusal')).toBe(traffic.refusals / off.seconds);
    expect(loads.map((load) => load.cost)).not.toContain('edgeRefusal');
  });

  it('sends the L1 misses to L2 and Redis, and adds the broker only over RabbitMQ', () => {
    const loads = saleLoads(sale({ l1Miss: 0.25 }));
    const reads = saleTraffic(DEFAULTS).reads / DEFAULTS.seconds;
    expect(loads.find((load) => load.cost === 'edgeL2Read')?.perSecond).toBe(reads * 0.25);
    expect(loads.find((load) => load.cost === 'redisL2Read')?.perSecond).toBe(reads * 0.25);
    expect(saleLoads(DEFAULTS).map((load) => load.tier)).not.toContain('broker');
    expect(saleLoads(sale({ queue: 'rabbitmq' })).map((load) => load.tier)).toContain('broker');
  });
});

describe('npm run sizing: cores', () => {
  it('take the median of the runs', () => {
    expect(median([24.6, 33.0, 31.9])).toBe(31.9);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeUndefined();
    expect(planningMicros('edgeL1Read')).toBe(median(COSTS.edgeL1Read.runs));
  });

  it('are requests per second × µs ÷ 1e6 × headroom', () => {
    const micros = planningMicros('edgeL1Read')!;
    const cores = coresOf({ tier: 'edge', requests: 'shop reads at L1', perSecond: 250_000, cost: 'edgeL1Read' }, 2);
    expect(cores).toEqual({ known: (250_000 / 1e6) * 2 * micros, perMicrosecondOf: {} });
  });

  it('carry a figure not measured yet as cores per µs of its letter, never as a number', () => {
    const unmeasured: CostTable = { ...COSTS, edgeRefusal: { ...COSTS.edgeRefusal, runs: [], unknown: { symbol: 'e', toBeMeasured: 'a scenario' } } };
    expect(planningMicros('edgeRefusal', unmeasured)).toBeUndefined();
    const cores = coresOf({ tier: 'edge', requests: 'refusals at the edge', perSecond: 300_000, cost: 'edgeRefusal' }, 2, unmeasured);
    expect(cores).toEqual({ known: 0, perMicrosecondOf: { e: 0.6 } });
    expect(renderProjection(DEFAULTS, unmeasured)).toMatch(/\| refusals at the edge \| 300,000 \| e \(to be measured\) \| 0\.6·e \|/);
  });

  it('once a figure has runs, carries it as a number: no letter, no note of what will measure it', () => {
    const measured: CostTable = { ...COSTS, edgeRefusal: { ...COSTS.edgeRefusal, runs: [30, 20, 40] }, proxyPass: { ...COSTS.proxyPass, runs: [10] } };
    const projection = renderProjection(DEFAULTS, measured);
    expect(projection).toMatch(/\| refusals at the edge \| 300,000 \| 30\.0 \| 18\.0 \|/);
    expect(projection).toMatch(/\| orders passed to the app \| 16,667 \| 10\.0 \| 0\.33 \|/);
    expect(projection).not.toMatch(/·e|·p|to be measured|e's aim/);
  });

  it('tells a voucher beyond one Redis core to go to buckets', () => {
    expect(renderProjection(sale({ units: 10_000_000, buyers: 20_000_000 }))).toMatch(/sell it from ≥ \d+ buckets/);
    expect(renderProjection(DEFAULTS)).toMatch(/One voucher's decisions run on one Redis core: 0\.\d+ of it/);
  });
});

describe('npm run sizing: the figures and the options', () => {
  it('every figure names its source; one not measured yet has a letter of its own and says what will measure it', () => {
    const figures: CostFigure[] = Object.values(COSTS);
    const symbols = figures.flatMap((figure) => (figure.unknown ? [figure.unknown.symbol] : []));
    expect(new Set(symbols).size).toBe(symbols.length);
    for (const figure of figures) {
      expect(figure.source.trim()).not.toBe('');
      if (figure.runs.length === 0) expect(figure.unknown?.toBeMeasured).toMatch(/\S/);
      else expect(figure.runs.every((run) => run > 0)).toBe(true);
    }
  });

  it('parses the options and refuses bad ones', () => {
    expect(parseSale(['--units', '5', '--buyers', '9', '--seconds', '2', '--edge', 'off', '--queue', 'rabbitmq']).sale).toEqual(
      sale({ units: 5, buyers: 9, seconds: 2, edge: false, queue: 'rabbitmq' }),
    );
    for (const bad of [
      ['--units', '0'],
      ['--units', '1.5'],
      ['--seconds', '-1'],
      ['--edge', 'maybe'],
      ['--l1-miss', '2'],
      ['--headroom', '0.5'],
      ['--buyers', ''],
      ['--nope'],
    ]) {
      expect(() => parseSale(bad), bad.join(' ')).toThrow(UsageError);
    }
  });
});
