/** The targets the project sets a run (issue 29's aims), judged on ratios between scenarios measured side by side. */
import { formatSpread, spreadOf, type PhaseResult, type Spread } from '../harness/index.js';
import type { BenchReport, Target } from './bench-report.js';
import { number, ratio } from './format.js';

/** Per round r, `pick(a[r]) / pick(b[r])`: the two ran one right after the other, so drift hits both alike. */
export function pairedRatios(a: PhaseResult[], b: PhaseResult[], pick: (slice: PhaseResult) => number): Spread {
  return spreadOf(a.map((slice, round) => (b[round] ? pick(slice) / pick(b[round]) : Number.NaN)));
}

const rps = (slice: PhaseResult) => slice.rps;
const cpuTotal = (slice: PhaseResult) => slice.cpu?.total ?? Number.NaN;
/**
 * Serving CPU less MariaDB's (app + Redis + broker + nginx), for the sale through the edge: its
 * requests touch no MySQL (the order worker off), so MariaDB's CPU meanwhile is others' work on
 * the shared server, which would only add noise to both sides of a pair.
 */
export const servingWithoutMariadb = (slice: Pick<PhaseResult, 'cpu'>) => (slice.cpu ? slice.cpu.total - slice.cpu.mariadb : Number.NaN);

/** A ratio target, judged on the median over rounds: `at least` (throughput) or `at most` (CPU per request). */
function ratioTarget(name: string, spread: Spread, aim: number, direction: 'at least' | 'at most'): Target {
  const median = spread.median;
  if (!Number.isFinite(median)) return { name, target: `${direction === 'at least' ? '≥' : '≤'} ${aim}×`, measured: '–', met: null, verdict: 'not measured' };
  const met = direction === 'at least' ? median >= aim : median <= aim;
  const missedBy = Math.abs(median - aim) / aim;
  return {
    name,
    target: `${direction === 'at least' ? '≥' : '≤'} ${aim}×`,
    measured: formatSpread(spread, 3, '×'),
    met,
    verdict: met ? 'met' : `missed by ${Math.round(missedBy * 100)} %`,
    spread,
  };
}

export function computeTargets(report: Pick<BenchReport, 'baseline' | 'seckill' | 'shopHot' | 'shopRedis' | 'edgeShop' | 'edgeSale' | 'options'>): Target[] {
  const async = report.seckill.find((s) => s.strategy === 'async');
  const sync = report.seckill.find((s) => s.strategy === 'sync');
  const targets: Target[] = [];
  if (async && report.baseline) {
    const base = report.baseline.slices;
    // Issue 29's aims with decisions batched: the order within 0.8× the rate and 1.25× the serving
    // CPU (server + Redis + MariaDB) of the baseline's one EVALSHA per request.
    targets.push(ratioTarget('seckill-async / baseline, req/s', pairedRatios(async.slices, base, rps), 0.8, 'at least'));
    targets.push(ratioTarget('seckill-async / baseline, CPU µs per request', pairedRatios(async.slices, base, cpuTotal), 1.25, 'at most'));
  }
  if (async && sync) {
    targets.push(ratioTarget('seckill-async / seckill-sync, req/s', pairedRatios(async.slices, sync.slices, rps), 5, 'at least'));
    targets.push(ratioTarget('seckill-sync / seckill-async, CPU µs per request', pairedRatios(sync.slices, async.slices, cpuTotal), 5, 'at least'));
  }
  if (async) targets.push(p99Target(async.fixedRate, report.baseline?.matchedRate));
  if (report.shopHot) {
    const { cached, bare } = report.shopHot;
    targets.push(ratioTarget('shop-hot / its bare in-memory route, req/s', pairedRatios(cached.slices, bare.slices, rps), 0.95, 'at least'));
    // 0.95× the rate = at most 1/0.95 = 1.05× the CPU per request.
    targets.push(ratioTarget('shop-hot / its bare route, CPU µs per request', pairedRatios(cached.slices, bare.slices, cpuTotal), 1.05, 'at most'));
  }
  // Issue 41's aims for the edge's reads, per serving CPU µs with nginx counted: an L1 read 3×
  // cheaper than the app's near-cache read, an L2 read 1.5× cheaper than the app's read from Redis.
  const { l1, l2 } = report.edgeShop ?? {};
  if (report.shopHot && l1) {
    targets.push(
      ratioTarget('shop-hot / edge-shop-l1, serving CPU µs per request', pairedRatios(report.shopHot.cached.slices, l1.slices, cpuTotal), 3, 'at least'),
    );
  }
  if (report.shopRedis && l2) {
    targets.push(
      ratioTarget('shop-redis / edge-shop-l2, serving CPU µs per request', pairedRatios(report.shopRedis.slices, l2.slices, cpuTotal), 1.5, 'at least'),
    );
  }
  // Issue 41's aims for the sale through the edge: a sold-out refusal 5× cheaper at the edge than
  // the app's, an accepted order through the edge at most 1.05× the same through the plain proxy
  // (MariaDB's CPU left out: see servingWithoutMariadb).
  const sale = (name: string) => report.edgeSale?.find((result) => result.scenario === name);
  const [appSoldOut, edgeSoldOut, proxyOrder, edgeOrder] = [sale('app-sold-out'), sale('edge-sold-out'), sale('proxy-order'), sale('edge-order')];
  if (appSoldOut && edgeSoldOut) {
    targets.push(
      ratioTarget(
        'app-sold-out / edge-sold-out, app + Redis + nginx CPU µs per request',
        pairedRatios(appSoldOut.slices, edgeSoldOut.slices, servingWithoutMariadb),
        5,
        'at least',
      ),
    );
  }
  if (proxyOrder && edgeOrder) {
    targets.push(
      ratioTarget(
        'edge-order / proxy-order, app + Redis + nginx CPU µs per request',
        pairedRatios(edgeOrder.slices, proxyOrder.slices, servingWithoutMariadb),
        1.05,
        'at most',
      ),
    );
  }
  return targets;
}

/**
 * The order's p99 against the baseline's at the same offered rate over 1,000 connections (issue
 * 29: ≤ 1.5×): absolute p99s on two shared cores measure the machine more than the code.
 */
function p99Target(order: PhaseResult, baseline: PhaseResult | undefined): Target {
  const name = 'seckill-async p99 / baseline p99, same offered rate';
  const aim = 1.5;
  const at = `${number(order.offeredRate ?? 0)} req/s offered, ${order.connections} connections`;
  const sameRate = baseline !== undefined && baseline.offeredRate === order.offeredRate;
  if (!sameRate) return { name, target: `≤ ${aim}×`, measured: `${order.latency.p99} ms (${at}; no baseline at that rate)`, met: null, verdict: 'not judged' };
  const value = order.latency.p99 / baseline.latency.p99;
  // The target is stated at 1,000 connections; at any other count the figure is shown but not judged.
  const met = order.connections === 1000 ? value <= aim : null;
  const verdict = met === null ? 'not judged' : met ? 'met' : `missed by ${Math.round(((value - aim) / aim) * 100)} %`;
  return { name, target: `≤ ${aim}×`, measured: `${ratio(value)} (${order.latency.p99} / ${baseline.latency.p99} ms at ${at})`, met, verdict };
}
