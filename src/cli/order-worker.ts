import { hostname } from 'node:os';
import pino from 'pino';
import { ConfigError, loadConfig } from '../infra/config.js';
import { createDb } from '../infra/db.js';
import { createMetrics } from '../infra/metrics.js';
import { serveMetrics } from '../infra/metrics-server.js';
import { closeRedis, createRedis } from '../infra/redis.js';
import { buildSeckill } from '../modules/seckill/index.js';

/**
 * The order worker (and unpaid-order canceller) as a process of its own, for deployments that
 * scale writers apart from the HTTP instances (then run those with SECKILL_WORKER=false). It
 * builds the sale exactly as an app instance does, without the HTTP server. With
 * SECKILL_QUEUE=rabbitmq it runs the outbox relay and the RabbitMQ order writers instead of the
 * stream's worker (docs/flows/seckill-rabbitmq.md).
 * SECKILL_CONSUMER names it in the consumer group; keep it stable across restarts so a restarted
 * worker re-reads its own pending entries at once instead of waiting for XAUTOCLAIM.
 */
let config;
try {
  config = loadConfig();
} catch (error) {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
}
const log = pino({ level: config.logLevel });
const redis = createRedis(config, { onError: (err, skipped) => log.warn({ err, skipped }, 'redis connection error') });
const db = createDb({
  mysqlUrl: config.mysqlUrl,
  poolSize: config.mysqlPoolSize,
  timeouts: { queryMs: config.deadlines.mysqlQueryMs, connectMs: config.deadlines.mysqlConnectMs },
});
const consumerName = config.seckill.consumer || `${hostname()}:worker`;
const metrics = createMetrics();
const seckill = buildSeckill({ config, redis, db, log, metrics, consumerName });

seckill.startJobs();
log.info({ consumer: consumerName, shards: config.seckill.streamShards }, 'order worker started');

// The worker's own series (breaker, MySQL attempts, entries, stream gauges) for Prometheus:
// GET /metrics on WORKER_METRICS_PORT, for a scraper holding METRICS_TOKEN, as on an app instance.
const metricsServer =
  config.workerMetricsPort > 0 && config.metricsToken !== ''
    ? await serveMetrics(metrics, { token: config.metricsToken, host: config.host, port: config.workerMetricsPort })
    : undefined;
if (metricsServer) log.info({ port: config.workerMetricsPort }, 'order worker metrics at /metrics');
else if (config.workerMetricsPort > 0) log.warn('WORKER_METRICS_PORT is set but METRICS_TOKEN is not: no /metrics');

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    log.info(`${signal} received, stopping the order worker`);
    void (async () => {
      metricsServer?.close();
      await seckill.close();
      await db.destroy();
      await closeRedis(redis);
    })();
  });
}
