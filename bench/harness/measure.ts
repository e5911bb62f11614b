/**
 * The two ways the harness loads a server:
 *
 * - `saturate`: closed loop (autocannon): N connections, each sending its next request as soon as
 *   the previous answer arrives. Its request rate is the server's throughput at saturation; its
 *   latencies are not reported, because a closed loop stops sending exactly when the server stalls
 *   (coordinated omission) and so hides the stall.
 * - `fixedRate`: open loop at a constant offered rate (the wrk2 method): request i is due at
 *   start + i / rate whether or not earlier answers have arrived, and its latency is measured from
 *   that due time, so time spent queued behind a stall counts. Connections come from an undici
 *   pool; a request waiting for a free connection is waiting, and that counts too.
 *
 * Why not autocannon's own rate mode (`overallRate`) for the second: in autocannon 9 every
 * connection spends its per-second budget at the start of each second (all connections' timers
 * tick together, so the offered load arrives in bursts), and its coordinated-omission correction
 * uses `Math.ceil(1 / rate)` as the expected interval in milliseconds, which is 1 ms whatever the
 * rate: a 30 ms answer is recorded as 30 samples (30, 29, … 1 ms). docs/BENCHMARKS.md shows the
 * two side by side.
 */
import type { EventEmitter } from 'node:events';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import * as hdr from 'hdr-histogram-js';
import { Pool } from 'undici';
import { scrapeMetrics } from './processes.js';
import { cpuSpread, startCpuCount, type CpuPerRequest, type CpuPids, type CpuSpread } from './cpu.js';
import type { SliceWork } from './redis-work.js';

export interface RequestSource {
  method: 'GET' | 'POST';
  /** The next request's path and headers; called once per request, in order. */
  next(): { path: string; headers?: Record<string, string> };
  /**
   * Sees every answer (only set where the body matters: it costs the load generator time);
   * `timing` from the fixed-rate phase only; `request`, in every phase, the object next() gave
   * for the request answered (one request at a time per connection, so each answer is known).
   */
  onResponse?(status: number, body: string, timing?: RequestTiming, request?: SentRequest): void;
  /** Sees every request that got no answer (socket error, timeout): fixed-rate phase only. */
  onNoAnswer?(timing: RequestTiming): void;
}

/** A request as RequestSource.next() gave it. */
export interface SentRequest {
  path: string;
  headers?: Record<string, string>;
}

/** When a fixed-rate request was due (performance.now()) and how long after that its answer (or failure) came. */
export interface RequestTiming {
  dueAt: number;
  latencyMs: number;
  /** The request as next() gave it (a source that retries sends it again). */
  request?: { path: string; headers?: Record<string, string> };
}

export interface Latency {
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export interface PhaseResult {
  /** "saturation" (closed loop) or "fixed rate" (open loop). */
  mode: 'saturation' | 'fixed-rate';
  connections: number;
  durationSeconds: number;
  /** Answers received. */
  requests: number;
  /** Answers per second over the phase. */
  rps: number;
  /** Offered rate (fixed-rate phase only). */
  offeredRate?: number;
  /** Milliseconds (fixed-rate phase: from the due time; saturation phase: autocannon's raw figures, for reference only). */
  latency: Latency;
  /**
   * p99 of the load generator's own event-loop delay, ms (fixed-rate phase): when it nears the
   * latencies, requests left late because the generator was busy, and the figures are an upper bound.
   */
  generatorLagP99?: number;
  /**
   * p99 of the server's event-loop delay during the phase, ms (from its /metrics, where
   * prom-client resets the histogram at each scrape); absent when the server has no /metrics.
   */
  serverLagP99?: number;
  /** CPU µs per answer, by process, over this phase or slice (when the processes are known). */
  cpu?: CpuPerRequest;
  /** A sale's slice: its accepted orders and the Redis commands they took (bench/redis-work.ts). */
  work?: SliceWork;
  /** Saturation over several slices: median and range of the slices' CPU per answer. */
  cpuSpread?: CpuSpread;
  /** Socket errors and timeouts. */
  errors: number;
  /** Answers with a status outside 2xx. */
  non2xx: number;
}

export type Ticker = (elapsedSeconds: number) => void;

/** How often autocannon samples a closed-loop run, and so how long it may idle after the last answer. */
const SAMPLE_MS = 50;

/**
 * Closed loop until about `durationSeconds` have passed. autocannon runs a fixed number of
 * requests (its duration mode drops the answers in flight when time is up, and a seckill order
 * whose answer was dropped would look like an order nobody was told of), sized from
 * `expectedRps`; the rate is answers over the time to the last answer.
 */
export async function saturate(
  url: string,
  source: RequestSource,
  options: { connections: number; durationSeconds: number; expectedRps: number; onTick?: Ticker },
): Promise<PhaseResult> {
  const { connections } = options;
  // A multiple of the connections: autocannon gives each connection an equal share.
  const amount = Math.max(1, Math.ceil((options.expectedRps * options.durationSeconds) / connections)) * connections;
  const started = performance.now();
  let answered = 0;
  let lastAnswer = started;
  const ticker = options.onTick ? setInterval(() => options.onTick!((performance.now() - started) / 1000), 250) : undefined;
  try {
    // Without a callback autocannon returns its event emitter made thenable (its types show only the promise).
    const instance = autocannon({
      url,
      connections,
      amount,
      // autocannon gives up on an answer after 10 s by default: on an overloaded machine a sync
      // order can take longer, and an order whose answer was dropped would count as never answered.
      timeout: 30,
      // autocannon ends a run at its next sample tick after the last answer (default every 1 s):
      // a 0.3 s slice of the smoke run took a whole second. Its per-sample figures are not read
      // here (the rate is answers over the time to the last answer), so the ticks only bound the wait.
      sampleInt: SAMPLE_MS,
      requests: [autocannonRequest(source)],
    }) as unknown as EventEmitter & PromiseLike<autocannon.Result>;
    instance.on('response', () => {
      answered += 1;
      lastAnswer = performance.now();
    });
    const result = await instance;
    const seconds = (lastAnswer - started) / 1000;
    return {
      mode: 'saturation',
      connections,
      durationSeconds: Math.round(seconds * 100) / 100,
      requests: answered,
      rps: Math.round(answered / seconds),
      latency: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max },
      errors: result.errors,
      non2xx: result.non2xx,
    };
  } finally {
    clearInterval(ticker);
  }
}

export async function fixedRate(
  url: string,
  source: RequestSource,
  options: { rate: number; connections: number; durationSeconds: number; onTick?: Ticker; onStart?: () => void },
): Promise<PhaseResult> {
  const { rate, durationSeconds } = options;
  const total = Math.max(1, Math.round(rate * durationSeconds));
  const connections = Math.min(options.connections, total);
  const pool = new Pool(url, { connections, pipelining: 1, headersTimeout: 30_000, bodyTimeout: 30_000, keepAliveTimeout: 60_000 });
  // Microseconds from 1 µs to 5 min, 3 significant digits (the HdrHistogram default precision).
  const histogram = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 300_000_000, numberOfSignificantValueDigits: 3 });
  let errors = 0;
  let non2xx = 0;
  let answered = 0;
  const inFlight = new Set<Promise<void>>();

  const send = (dueAt: number) => {
    const sent = source.next();
    const { path, headers } = sent;
    const request = pool
      .request({ method: source.method, path, headers: headers ?? {} })
      .then(async ({ statusCode, body }) => {
        const text = await body.text();
        const latencyMs = performance.now() - dueAt;
        histogram.recordValue(Math.max(1, Math.round(latencyMs * 1000)));
        answered += 1;
        if (statusCode < 200 || statusCode > 299) non2xx += 1;
        source.onResponse?.(statusCode, text, { dueAt, latencyMs, request: sent }, sent);
      })
      .catch(() => {
        errors += 1;
        source.onNoAnswer?.({ dueAt, latencyMs: performance.now() - dueAt, request: sent });
      })
      .finally(() => inFlight.delete(request));
    inFlight.add(request);
  };

  // Open the connections first, so that connection set-up does not land in the first requests' latency.
  await Promise.all(
    Array.from({ length: connections }, () =>
      pool
        .request({ method: 'GET', path: '/bench/ping' })
        .then((r) => r.body.dump())
        .catch(() => undefined),
    ),
  );

  const lag = monitorEventLoopDelay({ resolution: 5 });
  lag.enable();
  const intervalMs = 1000 / rate;
  options.onStart?.(); // the connections are open: the first request is due now
  const started = performance.now();
  let sent = 0;
  let lastTick = 0;
  while (sent < total) {
    const now = performance.now();
    const due = Math.min(total, Math.floor((now - started) / intervalMs) + 1);
    while (sent < due) send(started + sent++ * intervalMs);
    if (options.onTick && now - lastTick > 250) {
      lastTick = now;
      options.onTick((now - started) / 1000);
    }
    // Wake at the next due time (timers fire no sooner than 1 ms; several requests may then be due).
    await sleep(Math.max(0, started + sent * intervalMs - performance.now()));
  }
  await Promise.all([...inFlight]);
  const elapsedSeconds = (performance.now() - started) / 1000;
  lag.disable();
  await pool.close();
  const ms = (micros: number) => Math.round(micros / 100) / 10;
  return {
    mode: 'fixed-rate',
    connections,
    durationSeconds: Math.round(elapsedSeconds * 100) / 100,
    requests: answered,
    rps: Math.round(answered / elapsedSeconds),
    offeredRate: rate,
    latency: {
      p50: ms(histogram.getValueAtPercentile(50)),
      p90: ms(histogram.getValueAtPercentile(90)),
      p99: ms(histogram.getValueAtPercentile(99)),
      max: ms(histogram.maxValue),
    },
    generatorLagP99: Math.round(lag.percentile(99) / 1e5) / 10,
    errors,
    non2xx,
  };
}

/** autocannon's rate mode, kept to show how its figures differ (see the module comment). */
export async function autocannonRate(
  url: string,
  source: RequestSource,
  options: { rate: number; connections: number; durationSeconds: number },
): Promise<PhaseResult> {
  const result = await autocannon({
    url,
    connections: options.connections,
    overallRate: options.rate,
    duration: options.durationSeconds,
    requests: [autocannonRequest(source)],
  });
  return {
    mode: 'fixed-rate',
    connections: Math.min(options.connections, options.rate),
    durationSeconds: result.duration,
    requests: result.requests.total,
    rps: Math.round(result.requests.total / result.duration),
    offeredRate: options.rate,
    latency: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max },
    errors: result.errors,
    non2xx: result.non2xx,
  };
}

/**
 * The source's requests, one by one, as autocannon asks for them. autocannon hands a connection's
 * context to the setup of its next request and then to that request's answer (pipelining 1: one
 * request out per connection), so the context carries the request to its answer.
 */
function autocannonRequest(source: RequestSource): autocannon.Request {
  return {
    method: source.method,
    setupRequest: (request, context) => {
      const sent = source.next();
      (context as { sent?: SentRequest }).sent = sent;
      return { ...request, path: sent.path, headers: { ...request.headers, ...sent.headers } };
    },
    ...(source.onResponse
      ? { onResponse: (status: number, body: string, context: object) => source.onResponse!(status, body, undefined, (context as { sent?: SentRequest }).sent) }
      : {}),
  };
}

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
    const probe = await saturate(url, source, { connections, durationSeconds: warmUpSeconds / 4, expectedRps: 1_000, onTick });
    const warm = await saturate(url, source, { connections, durationSeconds: warmUpSeconds, expectedRps: probe.rps, onTick });
    expected.set(name, warm.rps);
  }

  const slices = new Map<string, PhaseResult[]>(targets.map((target) => [target.name, []]));
  const sliceSeconds = durationSeconds / rounds;
  const cpuPids = options.cpuPids ?? {};
  for (let round = 1; round <= rounds; round++) {
    for (const { name, url, source, serverPid, brokerPid, sliceWork } of targets) {
      const onTick = step(`${name}: saturation, ${connections} connections, slice ${round}/${rounds}`, sliceSeconds);
      const work = await sliceWork?.();
      const cpu = startCpuCount({ ...cpuPids, server: serverPid, broker: brokerPid });
      const slice = await saturate(url, source, { connections, durationSeconds: sliceSeconds, expectedRps: expected.get(name)!, onTick });
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
  for (const { name, url, source, afterLoad, serverPid, brokerPid, alsoAtRateOf } of targets) {
    const fixedPhase = (rate: number) => measureFixedRate({ name, url, source, serverPid, brokerPid }, rate, { ...options, cpuPids }, step);
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

/** One open-loop phase at `rate`, with the CPU it cost and the server's loop lag meanwhile. */
async function measureFixedRate(
  { name, url, source, serverPid, brokerPid }: Pick<LoadTarget, 'name' | 'url' | 'source' | 'serverPid' | 'brokerPid'>,
  rate: number,
  options: MeasureOptions & { cpuPids: CpuPids },
  step: (label: string, seconds?: number) => Ticker,
): Promise<PhaseResult> {
  const { latencyConnections, durationSeconds } = options;
  await serverLoopLagP99(url); // starts the server's lag histogram afresh
  const cpu = startCpuCount({ ...options.cpuPids, server: serverPid, broker: brokerPid });
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
