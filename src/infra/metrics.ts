import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { LockObserver } from '../lib/lock/index.js';

/**
 * Prometheus metrics of one app instance (prom-client), served at `GET /metrics`.
 * One registry per app, not prom-client's global one, so several apps in one process (tests,
 * benchmarks) keep their numbers apart.
 */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const beforeScrape: Array<() => Promise<void>> = [];
  return {
    registry,
    /** Runs `refresh` before each scrape: a feature sets the gauges it reads from Redis. */
    onScrape(refresh: () => Promise<void>): void {
      beforeScrape.push(refresh);
    },
    /** The text exposition of every metric, gauges refreshed first. */
    async render(): Promise<string> {
      await Promise.all(beforeScrape.map((refresh) => refresh()));
      return registry.metrics();
    },
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
      help: 'Orders the order worker (stream entries) or the RabbitMQ order writers (messages) finished, by result (created, duplicate, user-has-order, dead-letter)',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    workerFailures: new Counter({
      name: 'seckill_worker_failures_total',
      help: 'Failed attempts to write an order to MySQL (the entry stays pending and is retried)',
      registers: [registry],
    }),
    workerMysqlAttempts: new Counter({
      name: 'seckill_worker_mysql_attempts_total',
      help: 'MySQL calls of the order worker by kind: write (a batch or one order) or probe (SELECT 1 while the circuit is open); bounded per second whatever the backlog',
      labelNames: ['kind'] as const,
      registers: [registry],
    }),
    workerMysqlFailures: new Counter({
      name: 'seckill_worker_mysql_failures_total',
      help: 'Order worker MySQL calls that failed because MySQL was unreachable or busy (these open the circuit), by kind',
      labelNames: ['kind'] as const,
      registers: [registry],
    }),
    workerBreakerState: new Gauge({
      name: 'seckill_worker_breaker_state',
      help: "The order worker's circuit breaker on MySQL: 1 for the current state (closed, open, half-open), 0 for the others",
      labelNames: ['state'] as const,
      registers: [registry],
    }),
    replicaAckTimeouts: new Counter({
      name: 'seckill_replica_ack_timeouts_total',
      help: 'Accepted seckill orders answered before SECKILL_REPLICA_ACKS replicas confirmed them within SECKILL_REPLICA_TIMEOUT_MS (in the stream, written later; lost if the master fails before a replica has them)',
      registers: [registry],
    }),
    reserveBatchSize: new Histogram({
      name: 'seckill_reserve_batch_size',
      help: 'Orders decided by one reserve.lua call: per shard one call is out at a time, and the orders arriving meanwhile go together in the next (1 at low load)',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
      registers: [registry],
    }),
    writeLag: new Histogram({
      name: 'seckill_order_write_lag_seconds',
      help: "From an order's acceptance in Redis (reserve.lua's time) to its commit in MySQL, as the writer that committed it sees it (the stream's worker or a RabbitMQ writer); a clock skew between Redis and the writer shifts it by as much",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    }),
    releaseLateness: new Histogram({
      name: 'seckill_release_lateness_seconds',
      help: 'How long after the end of its payment window an unpaid order was cancelled and its unit given back, by what found it (queue: the Redis release queue, on time; rabbitmq: the RabbitMQ release queue behind the delay queue, on time; sweep: the periodic sweep, the safety net)',
      labelNames: ['by'] as const,
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: [registry],
    }),
    stockLeft: new Gauge({
      name: 'seckill_stock_left',
      help: 'Units left in Redis of each sale open now (read at scrape time; at most 50 vouchers, ending soonest first)',
      labelNames: ['voucher_id'] as const,
      registers: [registry],
    }),
    ordersQueued: new Gauge({
      name: 'seckill_orders_queued',
      help: 'Orders accepted in Redis and not yet in MySQL (the queued hash), by shard',
      labelNames: ['shard'] as const,
      registers: [registry],
    }),
    streamPending: new Gauge({
      name: 'seckill_stream_pending',
      help: 'Entries (a batch of orders each) delivered to the order worker group and not yet acknowledged, by shard',
      labelNames: ['shard'] as const,
      registers: [registry],
    }),
    cacheRequests: new Counter({
      name: 'cache_requests_total',
      help: 'Cache events by cache and result: hit, null_hit, stale, miss, bloom_reject (per read); rebuild, rebuild_error, lock_timeout (per load)',
      labelNames: ['cache', 'result'] as const,
      registers: [registry],
    }),
    nearCacheEvents: new Counter({
      name: 'near_cache_events_total',
      help: 'Near cache events by cache: hit and miss (per read), invalidation (an entry Redis said changed); flush (cache "*": everything dropped on a connection drop or failover)',
      labelNames: ['cache', 'event'] as const,
      registers: [registry],
    }),
    consumerLag: new Gauge({
      name: 'seckill_consumer_lag',
      help: 'Entries of the order stream not yet delivered to the worker group, by shard (XINFO GROUPS lag; -1 when Redis cannot tell)',
      labelNames: ['shard'] as const,
      registers: [registry],
    }),
    deadLetters: new Gauge({
      name: 'seckill_dead_letters',
      help: 'Entries in the dead-letter stream, by shard (orders given up after SECKILL_MAX_DELIVERIES failures; each needs a look)',
      labelNames: ['shard'] as const,
      registers: [registry],
    }),
    rabbitmqUp: new Gauge({
      name: 'seckill_rabbitmq_up',
      help: "1 while this process's connection to RabbitMQ is open and not blocked, else 0, by address (its nodes, password hidden); absent where no sale jobs run with SECKILL_QUEUE=rabbitmq",
      labelNames: ['address'] as const,
      registers: [registry],
    }),
    rabbitmqQueueMessages: new Gauge({
      name: 'seckill_rabbitmq_queue_messages',
      help: 'Messages ready in the RabbitMQ queues of the sale (orders, dead letters, payment deadlines waiting in the delay queue, due orders in the release queue), by queue (read at scrape time; -1 when RabbitMQ does not answer in time)',
      labelNames: ['queue'] as const,
      registers: [registry],
    }),
    relayPublishes: new Counter({
      name: 'seckill_relay_publishes_total',
      help: 'Orders the outbox relay published to RabbitMQ, by outcome: confirmed (acknowledged in the stream), rejected (queue full), returned (unroutable), timeout, unavailable (the others stay in the stream and are published again)',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    rateLimitBatchSize: new Histogram({
      name: 'rate_limit_check_batch_size',
      help: "Events one fixed-window.lua call checked: one call is out at a time (per slot on a Redis Cluster), and the events arriving meanwhile go together in the next (1 at low load; a buyer's first request of a second needs no call)",
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
      registers: [registry],
    }),
    rateLimitRejections: new Counter({
      name: 'rate_limit_rejections_total',
      help: 'Requests refused with 429 by a rate limit, by limit (order:user, order:ip, sale:admission, sms:*, api:ip)',
      labelNames: ['limit'] as const,
      registers: [registry],
    }),
    lockWait: new Histogram({
      name: 'lock_wait_seconds',
      help: 'Time from asking for a distributed lock until it was taken or given up, by lock family (name up to the first colon), kind and outcome (acquired, timeout, busy)',
      labelNames: ['lock', 'kind', 'outcome'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    streamLength: new Gauge({
      name: 'seckill_stream_length',
      help: 'Entries in the order stream, by shard (undelivered + pending + not yet trimmed)',
      labelNames: ['shard'] as const,
      registers: [registry],
    }),
    smsFailures: new Counter({
      name: 'sms_send_failures_total',
      help: 'Login codes the SMS sender could not deliver (answered 503, code withdrawn), by reason (timeout, network, status)',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    uploadBytes: new Counter({
      name: 'upload_bytes_total',
      help: 'Bytes of images stored by POST /api/upload/blog',
      registers: [registry],
    }),
    uploadFiles: new Counter({
      name: 'upload_files_total',
      help: 'Image uploads by result (stored, too_large, not_image, over_quota) and images the sweeper deleted (swept)',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/** A RateLimiter's refusals into rate_limit_rejections_total and its calls' sizes into rate_limit_check_batch_size. */
export function rateLimiterMetrics(metrics: Metrics): { onReject: (rule: string) => void; onBatch: (size: number) => void } {
  return {
    onReject: (rule) => metrics.rateLimitRejections.inc({ limit: rule }),
    onBatch: (size) => metrics.rateLimitBatchSize.observe(size),
  };
}

/** Lock waits into lock_wait_seconds, labelled by the lock's family (its name up to the first colon). */
export function lockWaitObserver(metrics: Metrics): LockObserver {
  return {
    onAcquire: ({ name, kind, outcome, waitedMs }) => {
      const family = name.split(':', 1)[0] ?? name;
      metrics.lockWait.observe({ lock: family, kind, outcome }, waitedMs / 1000);
    },
  };
}
