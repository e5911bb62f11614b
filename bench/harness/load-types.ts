/** What the load generators send and what a phase of load measured. */
import type { CpuPerRequest, CpuSpread } from './cpu.js';
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
  /**
   * The same requests as wrk sends them (harness/wrk.ts), for the saturation phase: set only by
   * sources whose answers change nothing, since wrk drops the answers in flight when it stops.
   * Their answers still reach onResponse (status and body).
   */
  readonly wrk?: WrkRequests;
}

/** Requests wrk can send: one method and path, with header sets taken in turn. */
export interface WrkRequests {
  method: 'GET' | 'POST';
  path: string;
  /** Request i sends set i mod n (e.g. every user's login token in turn); none: no headers of the source's. */
  headerSets?: ReadonlyArray<Record<string, string>>;
}

/** One request sent again and again, by autocannon or by wrk (a read's answers change nothing). */
export function repeatedRequest(method: 'GET' | 'POST', path: string): RequestSource {
  return { method, next: () => ({ path }), wrk: { method, path } };
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
  /** The saturation phase's load generator: autocannon in this process, or wrk (harness/wrk.ts). */
  generator?: 'autocannon' | 'wrk';
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
  /** A sale's slice: its accepted orders and the Redis commands they took (redis-work.ts). */
  work?: SliceWork;
  /** Saturation over several slices: median and range of the slices' CPU per answer. */
  cpuSpread?: CpuSpread;
  /** Socket errors and timeouts. */
  errors: number;
  /** Answers with a status outside 2xx. */
  non2xx: number;
}

export type Ticker = (elapsedSeconds: number) => void;
