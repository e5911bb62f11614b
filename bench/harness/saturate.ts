/**
 * `saturate`: closed loop (autocannon): N connections, each sending its next request as soon as
 * the previous answer arrives. Its request rate is the server's throughput at saturation; its
 * latencies are not reported, because a closed loop stops sending exactly when the server stalls
 * (coordinated omission) and so hides the stall. The latencies come from the open loop
 * (fixed-rate.ts).
 *
 * Why not autocannon's own rate mode (`overallRate`, `autocannonRate` here, kept to compare) for
 * the open loop: in autocannon 9 every connection spends its per-second budget at the start of
 * each second (all connections' timers tick together, so the offered load arrives in bursts), and
 * its coordinated-omission correction uses `Math.ceil(1 / rate)` as the expected interval in
 * milliseconds, which is 1 ms whatever the rate: a 30 ms answer is recorded as 30 samples (30,
 * 29, … 1 ms). docs/BENCHMARKS.md shows the two side by side.
 */
import type { EventEmitter } from 'node:events';
import autocannon from 'autocannon';
import type { PhaseResult, RequestSource, SentRequest, Ticker } from './load-types.js';

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
      generator: 'autocannon',
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
