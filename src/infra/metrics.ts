import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Prometheus metrics of one app instance (prom-client), served at `GET /metrics`.
 * One registry per app, not prom-client's global one, so several apps in one process (tests,
 * benchmarks) keep their numbers apart.
 */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    httpDuration: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP requests by route, method and status code',
      labelNames: ['method', 'route', 'status'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    seckillRequests: new Counter({
      name: 'seckill_requests_total',
      help: 'Seckill order requests by strategy and outcome (accepted, sold-out, already-bought, ...)',
      labelNames: ['strategy', 'outcome'] as const,
      registers: [registry],
    }),
    ordersWritten: new Counter({
      name: 'seckill_worker_entries_total',
      help: 'Stream entries the order worker finished, by result (created, duplicate, user-has-order, dead-letter)',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    workerFailures: new Counter({
      name: 'seckill_worker_failures_total',
      help: 'Failed attempts to write an order to MySQL (the entry stays pending and is retried)',
      registers: [registry],
    }),
    replicaAckTimeouts: new Counter({
      name: 'seckill_replica_ack_timeouts_total',
      help: 'Accepted seckill orders answered before SECKILL_REPLICA_ACKS replicas confirmed them within SECKILL_REPLICA_TIMEOUT_MS (in the stream, written later; lost if the master fails before a replica has them)',
      registers: [registry],
    }),
    streamPending: new Gauge({
      name: 'seckill_stream_pending',
      help: 'Entries delivered to the order worker group and not yet acknowledged, by shard',
      labelNames: ['shard'] as const,
      registers: [registry],
    }),
    cacheRequests: new Counter({
      name: 'cache_requests_total',
      help: 'Cache events by cache and result: hit, null_hit, stale, miss, bloom_reject (per read); rebuild, rebuild_error, lock_timeout (per load)',
      labelNames: ['cache', 'result'] as const,
      registers: [registry],
    }),
    streamLength: new Gauge({
      name: 'seckill_stream_length',
      help: 'Entries in the order stream, by shard (undelivered + pending + not yet trimmed)',
      labelNames: ['shard'] as const,
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
