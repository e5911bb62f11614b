/** The HTTP scenarios of a report as rows, one per measured route, for its table and its chart. */
import type { EdgeSaleScenario, HttpResult } from '../scenarios/index.js';
import type { BenchReport } from './bench-report.js';

export interface HttpRow {
  name: string;
  route: string;
  result: Pick<HttpResult, 'saturation' | 'fixedRate' | 'slices'>;
  versus?: { name: string; rps: number };
  correct?: boolean;
  /** Another fixed-rate phase of a scenario already listed: its saturation figures are that row's. */
  fixedRateOnly?: boolean;
}

/** The sale through the edge in pairs: each edge scenario and the scenario it is judged against. */
export const EDGE_SALE_PAIRS: Partial<Record<EdgeSaleScenario, EdgeSaleScenario>> = { 'edge-sold-out': 'app-sold-out', 'edge-order': 'proxy-order' };

export function httpRows(report: BenchReport): HttpRow[] {
  const rows: HttpRow[] = [];
  const base = report.baseline;
  if (base) rows.push({ name: 'baseline', route: base.route, result: base });
  if (base?.matchedRate)
    rows.push({ name: "baseline at the order's rate", route: base.route, result: { ...base, fixedRate: base.matchedRate }, fixedRateOnly: true });
  for (const sale of report.seckill) {
    rows.push({
      name: sale.scenario,
      route: sale.strategy === 'semaphore' ? 'POST /bench/seckill-semaphore/{id}' : 'POST /api/voucher-order/seckill/{id}',
      result: sale,
      ...(base ? { versus: { name: 'baseline', rps: base.saturation.rps } } : {}),
      correct: sale.pass,
    });
  }
  if (report.shopHot) {
    const { cached, bare } = report.shopHot;
    rows.push({ name: 'shop-hot', route: cached.route, result: cached, versus: { name: 'bare route', rps: bare.saturation.rps } });
    rows.push({ name: 'shop-hot bare route', route: bare.route, result: bare });
  }
  const nearCache = report.shopHot && { name: 'shop-hot', rps: report.shopHot.cached.saturation.rps };
  const shopRead = (name: string, result: HttpResult | undefined) => {
    if (result) rows.push({ name, route: result.route, result, ...(nearCache ? { versus: nearCache } : {}) });
  };
  shopRead('shop-redis', report.shopRedis);
  shopRead('edge-shop-l1', report.edgeShop?.l1);
  shopRead('edge-shop-l2', report.edgeShop?.l2);
  // The sale through the edge: each edge scenario beside the one it is judged against.
  const edgeSale = report.edgeSale ?? [];
  for (const result of edgeSale) {
    const against = edgeSale.find((other) => other.scenario === EDGE_SALE_PAIRS[result.scenario]);
    rows.push({
      name: result.scenario,
      route: result.route,
      result,
      ...(against ? { versus: { name: against.scenario, rps: against.saturation.rps } } : {}),
      correct: result.pass,
    });
  }
  return rows;
}
