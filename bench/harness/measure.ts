/**
 * How the harness loads the servers of a run: every target warmed up, saturated in slices that
 * take turns (saturate.ts, the closed loop), then held at a fixed offered rate below that
 * (fixed-rate.ts, the open loop whose latencies are reported).
 */
import { scrapeMetrics } from './processes.js';
import { cpuSpread, startCpuCount, type CpuPids } from './cpu.js';
import { fixedRate } from './fixed-rate.js';
import type { Latency, PhaseResult, RequestSource, Ticker } from './load-types.js';
import type { SliceWork } from './redis-work.js';
import { autocannonRate, saturate } from './saturate.js';
import { saturateWithWrk } from './wrk.js';

export interface MeasureOptions {
  connections: number;
  latencyConnections: number;
  durationSeconds: number;
  /** Offered rate of the fixed-rate phase, or else `rateFraction` of the saturation rate. */
  rate: number | undefined;
  rateFraction: number;
  /** Ceiling of the rate from `rateFraction`. */
  maxRate: number;
  /** Fixed-rate phase by autocannon's rate mode (for comparison) instead of the open loop. */
  autocannonRate: boolean;
  /** Saturate with autocannon even the sources wrk can send (RequestSource.wrk), to compare the generators. */
  autocannonOnly: boolean;
  /** Redis and MariaDB, whose CPU per request is counted beside the server's and the generator's. */
  cpuPids?: CpuPids;
}

/** One route under test: what is measured, where, with which requests. */
export interface LoadTarget {
  name: string;
  url: string;
  source: RequestSource;
  /** The server process, whose CPU per request is counted (absent: a deployment elsewhere). */
  serverPid?: number;
  /** A message broker the target's orders pass through, whose CPU is counted with the serving processes'. */
  brokerPid?: number;
  /** The master of an nginx the target's requests pass through, counted with its workers like the serving processes. */
  nginxPid?: number;
  /** Runs right after the target's last phase (e.g. waiting for the order worker to drain). */
  afterLoad?: () => Promise<void>;
  /**
   * Counts a saturation slice's work beyond its answers: started before the slice, ended after it
   * (a sale's end waits for its order worker to drain, so that no order's writes spill into the
   * next target's slice).
   */
  sliceWork?: () => Promise<() => Promise<SliceWork>>;
  /**
   * The name of another target whose fixed rate this one is also measured at (after its own), so
   * that two latencies are compared at one offered rate rather than each at a share of its own
   * saturation rate.
   */
  alsoAtRateOf?: string;
}

export interface Measurement {
  saturation: PhaseResult;
  fixedRate: PhaseResult;
  /** The saturation phase's slices, in order: slice r of every target ran in round r. */
  slices: PhaseResult[];
  /** The fixed-rate phase at the offered rate of `LoadTarget.alsoAtRateOf`, when it names a target measured here. */
  matchedRate?: PhaseResult;
}

/**
 * Measures every target: warm-up (JIT, pools, caches; not reported), then saturation, then a
 * fixed rate below it.
 *
 * The saturation phase is taken in `rounds` slices that go round the targets in turn (A B C A B
 * C …), so that whatever else the machine does meanwhile (on a shared two-core VM, rates drift by
 * tens of percent from one minute to the next) weighs on every target alike, and the ratios
 * between them (the targets the project sets) are measured rather than the drift.
 */
export async function measureAll(
  targets: LoadTarget[],
  options: MeasureOptions,
  step: (label: string, seconds?: number) => Ticker,
  rounds = 5,
): Promise<Map<string, Measurement>> {
  const { connections, durationSeconds } = options;
  const warmUpSeconds = Math.min(2, durationSeconds / 2);
  const expected = new Map<string, number>();
  for (const { name, url, source } of targets) {
    const onTick = step(`${name}: warm-up`, warmUpSeconds);
    const probe = await closedLoop(url, source, { connections, durationSeconds: warmUpSeconds / 4, expectedRps: 1_000, onTick }, options);
    const warm = await closedLoop(url, source, { connections, durationSeconds: warmUpSeconds, expectedRps: probe.rps, onTick }, options);
    expected.set(name, warm.rps);
  }

  const slices = new Map<string, PhaseResult[]>(targets.map((target) => [target.name, []]));
  const sliceSeconds = durationSeconds / rounds;
  const cpuPids = options.cpuPids ?? {};
  for (let round = 1; round <= rounds; round++) {
    for (const { name, url, source, serverPid, brokerPid, nginxPid, sliceWork } of targets) {
      const onTick = step(`${name}: saturation, ${connections} connections, slice ${round}/${rounds}`, sliceSeconds);
      const work = await sliceWork?.();
      const cpu = startCpuCount({ ...cpuPids, server: serverPid, broker: brokerPid, nginx: nginxPid });
      const slice = await closedLoop(url, source, { connections, durationSeconds: sliceSeconds, expectedRps: expected.get(name)!, onTick }, options);
      expected.set(name, slice.rps);
      // CPU up to the last answer, as for every target; the work after the drain.
      const measured = { ...slice, cpu: cpu(slice.requests) };
      slices.get(name)!.push(work ? { ...measured, work: await work() } : measured);
    }
  }

  const saturations = new Map(targets.map(({ name }) => [name, combine(slices.get(name)!)]));
  // Each target's own fixed rate, known before any fixed phase runs: another target may be measured at it too.
  const rates = new Map<string, number>();
  for (const [name, { rps }] of saturations) {
    rates.set(name, options.rate ?? Math.max(1, Math.min(options.maxRate, Math.round(rps * options.rateFraction))));
  }
  const measurements = new Map<string, Measurement>();
  for (const { name, url, source, afterLoad, serverPid, brokerPid, nginxPid, alsoAtRateOf } of targets) {
    const fixedPhase = (rate: number) => measureFixedRate({ name, url, source, serverPid, brokerPid, nginxPid }, rate, { ...options, cpuPids }, step);
    const measured: Measurement = { saturation: saturations.get(name)!, fixedRate: await fixedPhase(rates.get(name)!), slices: slices.get(name)! };
    const matched = alsoAtRateOf === undefined ? undefined : rates.get(alsoAtRateOf);
    if (matched !== undefined) measured.matchedRate = await fixedPhase(matched);
    measurements.set(name, measured);
    if (afterLoad) {
      step(`${name}: after the load`);
      await afterLoad();
    }
  }
  return measurements;
}

/** The closed loop by wrk where the source can be sent by it (and autocannon is not asked for), else by autocannon. */
function closedLoop(
  url: string,
  source: RequestSource,
  phase: Parameters<typeof saturate>[2],
  options: Pick<MeasureOptions, 'autocannonOnly'>,
): Promise<PhaseResult> {
  const { wrk } = source;
  return wrk && !options.autocannonOnly ? saturateWithWrk(url, source, wrk, phase) : saturate(url, source, phase);
}

/** One open-loop phase at `rate`, with the CPU it cost and the server's loop lag meanwhile. */
async function measureFixedRate(
  { name, url, source, serverPid, brokerPid, nginxPid }: Pick<LoadTarget, 'name' | 'url' | 'source' | 'serverPid' | 'brokerPid' | 'nginxPid'>,
  rate: number,
  options: MeasureOptions & { cpuPids: CpuPids },
  step: (label: string, seconds?: number) => Ticker,
): Promise<PhaseResult> {
  const { latencyConnections, durationSeconds } = options;
  await serverLoopLagP99(url); // starts the server's lag histogram afresh
  const cpu = startCpuCount({ ...options.cpuPids, server: serverPid, broker: brokerPid, nginx: nginxPid });
  const phase = await (options.autocannonRate ? autocannonRate : fixedRate)(url, source, {
    rate,
    connections: latencyConnections,
    durationSeconds,
    onTick: step(`${name}: fixed rate ${rate} req/s, ${latencyConnections} connections`, durationSeconds),
  });
  const fixed = { ...phase, cpu: cpu(phase.requests) };
  const serverLag = await serverLoopLagP99(url);
  return serverLag === undefined ? fixed : { ...fixed, serverLagP99: serverLag };
}

/** The server's event-loop delay p99 since its previous scrape, in ms (prom-client's default metric). */
async function serverLoopLagP99(url: string): Promise<number | undefined> {
  try {
    const response = await scrapeMetrics(url);
    if (!response.ok) return undefined;
    const line = /^nodejs_eventloop_lag_p99_seconds(?:\{[^}]*\})? ([\d.e+-]+)$/m.exec(await response.text());
    return line ? Math.round(Number(line[1]) * 10_000) / 10 : undefined;
  } catch {
    return undefined;
  }
}

/** Slices of one saturation phase as one: answers over time; the worst of their (reference-only) latencies. */
function combine(slices: PhaseResult[]): PhaseResult {
  const seconds = slices.reduce((sum, slice) => sum + slice.durationSeconds, 0);
  const requests = slices.reduce((sum, slice) => sum + slice.requests, 0);
  const worst = (pick: (latency: Latency) => number) => Math.max(...slices.map((slice) => pick(slice.latency)));
  return {
    mode: 'saturation',
    ...(slices[0]!.generator ? { generator: slices[0]!.generator } : {}),
    connections: slices[0]!.connections,
    durationSeconds: Math.round(seconds * 100) / 100,
    requests,
    rps: Math.round(requests / seconds),
    latency: { p50: worst((l) => l.p50), p90: worst((l) => l.p90), p99: worst((l) => l.p99), max: worst((l) => l.max) },
    ...(slices.every((slice) => slice.cpu) ? { cpuSpread: cpuSpread(slices.map((slice) => slice.cpu!)) } : {}),
    errors: slices.reduce((sum, slice) => sum + slice.errors, 0),
    non2xx: slices.reduce((sum, slice) => sum + slice.non2xx, 0),
  };
}
