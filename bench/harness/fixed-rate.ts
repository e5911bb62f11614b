/**
 * `fixedRate`: open loop at a constant offered rate (the wrk2 method): request i is due at
 * start + i / rate whether or not earlier answers have arrived, and its latency is measured from
 * that due time, so time spent queued behind a stall counts. Connections come from an undici
 * pool; a request waiting for a free connection is waiting, and that counts too.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import * as hdr from 'hdr-histogram-js';
import { Pool } from 'undici';
import type { PhaseResult, RequestSource, Ticker } from './load-types.js';

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
