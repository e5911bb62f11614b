/** What every scenario of `npm run bench` hands the run: its targets, and what to make of their measurements. */
import type { LoadTarget, Measurement, PhaseResult } from '../harness/index.js';

export interface HttpResult {
  scenario: string;
  route: string;
  saturation: PhaseResult;
  fixedRate: PhaseResult;
  slices: PhaseResult[];
  /** The fixed-rate phase at another scenario's offered rate (the baseline at the order's). */
  matchedRate?: PhaseResult;
}

/** A scenario ready to be measured: its routes, and what to do with their measurements. */
export interface PreparedScenario<R> {
  targets: LoadTarget[];
  finish(measurements: Map<string, Measurement>): Promise<R>;
  /** Stops its server; safe to call more than once. */
  stop(): Promise<void>;
}

/** The servers of the HTTP scenarios without a sale: the order worker stays off. */
export const SERVER_ENV = { SECKILL_WORKER: 'false' };

/** A target's measurements as the result of its route. */
export function httpResult(target: LoadTarget, route: string, measurements: Map<string, Measurement>): HttpResult {
  const measured = measurements.get(target.name);
  if (!measured) throw new Error(`${target.name} was not measured`);
  return { scenario: target.name, route, ...measured };
}
