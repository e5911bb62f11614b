import { hostname } from 'node:os';
import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../../infra/config.js';
import type { Db } from '../../infra/db.js';
import type { Log } from '../../infra/logging.js';
import { createMetrics, lockWaitObserver, type Metrics } from '../../infra/metrics.js';
import type { RedisClient } from '../../infra/redis.js';
import { IdGenerator } from '../../lib/id/index.js';
import { LockClient } from '../../lib/lock/index.js';
import { AdmissionGate, RateLimiter } from '../../lib/rate-limit/index.js';
import { UnpaidOrderCanceller } from './canceller.js';
import { LIMIT_NAMES, SaleKeys } from './keys.js';
import { OrderLimits } from './order-limits.js';
import { OrderRepository } from './order-repository.js';
import { orderRoutes } from './order-routes.js';
import { OrderService, type Locks } from './order-service.js';
import { OrderStream } from './order-stream.js';
import { OrderWorker } from './order-worker.js';
import { SaleStore } from './sale-store.js';
import { BREAKER_STATES } from './write-breaker.js';
import { VoucherRepository } from './voucher-repository.js';
import { voucherRoutes } from './voucher-routes.js';
import { saleControlRoutes } from './sale-control-routes.js';
import { SaleControls } from './sale-controls.js';
import { SoldOutMemory } from './sold-out.js';
import { VoucherService } from './voucher-service.js';

export type { Locks } from './order-service.js';

export interface SeckillDeps {
  config: Pick<Config, 'seckill' | 'rateLimit' | 'idBlockSize' | 'port'>;
  redis: RedisClient;
  db: Db;
  log: Log;
  /** Defaults to a registry of its own. */
  metrics?: Metrics;
  /** The sync strategy's per-user locks; without them the sale makes a lock client of its own when it needs one. */
  locks?: Locks;
  /** Consumer name of this process's order worker (default SECKILL_CONSUMER, else `{hostname}:{port}`). */
  consumerName?: string;
}

export type Seckill = ReturnType<typeof buildSeckill>;

/**
 * The flash sale, whole: vouchers, orders and the jobs that move orders from Redis to MySQL.
 * The app registers `routes` and calls start/close; the standalone worker (src/cli/order-worker.ts)
 * calls startJobs/close and never loads the HTTP server.
 */
export function buildSeckill(deps: SeckillDeps) {
  const { config, redis, db, log } = deps;
  const metrics = deps.metrics ?? createMetrics();
  const settings = config.seckill;
  const keys = new SaleKeys(settings.streamShards);
  const store = new SaleStore(redis, keys, {
    acks: settings.replicaAcks,
    timeoutMs: settings.replicaTimeoutMs,
    onTimeout: replicaAckTimeoutReporter(metrics, log, settings.replicaAcks),
  });
  const stream = new OrderStream(redis, keys);
  const vouchers = new VoucherRepository(db);
  const orders = new OrderRepository(db);
  const voucherService = new VoucherService(vouchers, store);
  const controls = new SaleControls(db, store);
  const soldOut = new SoldOutMemory(redis, keys, (err: unknown) => log.warn({ err }, 'could not check the sold-out vouchers'));
  // The sync strategy takes a per-user lock; the async one needs none.
  const ownLocks = !deps.locks && settings.strategy === 'sync' ? new LockClient(redis, { observer: lockWaitObserver(metrics) }) : undefined;
  const locks = deps.locks ?? ownLocks;
  const orderService = new OrderService({
    strategy: settings.strategy,
    ids: new IdGenerator(redis, { blockSize: config.idBlockSize }),
    store,
    stream,
    orders,
    vouchers,
    ...(locks ? { locks } : {}),
    soldOut,
    countOutcome: (strategy, outcome) => metrics.seckillRequests.inc({ strategy, outcome }),
  });
  const limits = new OrderLimits(
    new RateLimiter(redis, { onReject: (rule) => metrics.rateLimitRejections.inc({ limit: rule }) }),
    new AdmissionGate(redis, {
      name: LIMIT_NAMES.admission,
      ratePerSecond: config.rateLimit.saleAdmissionPerSecond,
      onReject: () => metrics.rateLimitRejections.inc({ limit: 'sale:admission' }),
    }),
    { perUser: config.rateLimit.orderPerUser, perIp: config.rateLimit.orderPerIp },
  );
  const worker = new OrderWorker(stream, store, orders, {
    consumer: deps.consumerName ?? (settings.consumer || `${hostname()}:${config.port}`),
    batchSize: settings.workerBatchSize,
    maxDeliveries: settings.maxDeliveries,
    claimIdleMs: settings.claimIdleMs,
    log,
    onResult: (result) => (result === 'failed' ? metrics.workerFailures.inc() : metrics.ordersWritten.inc({ result })),
    breaker: {
      onAttempt: (kind) => metrics.workerMysqlAttempts.inc({ kind }),
      onFailure: (kind) => metrics.workerMysqlFailures.inc({ kind }),
    },
  });
  const canceller = new UnpaidOrderCanceller(orders, store, {
    paymentWindowSeconds: settings.paymentWindowSeconds,
    intervalMs: Math.min(30_000, Math.max(1_000, (settings.paymentWindowSeconds * 1000) / 4)),
    log,
  });
  metrics.onScrape(async () => {
    for (const state of BREAKER_STATES) metrics.workerBreakerState.set({ state }, worker.breaker.state === state ? 1 : 0);
    for (const { shard, length, pending, lag, deadLetters } of await stream.stats()) {
      const labels = { shard: String(shard) };
      metrics.streamLength.set(labels, length);
      metrics.streamPending.set(labels, pending);
      metrics.consumerLag.set(labels, lag ?? -1);
      metrics.deadLetters.set(labels, deadLetters);
    }
  });

  const routes: FastifyPluginAsync = async (api) => {
    await api.register(voucherRoutes, { service: voucherService });
    await api.register(saleControlRoutes, { controls });
    await api.register(orderRoutes, { service: orderService, limits });
  };

  const startJobs = (): void => {
    worker.start();
    canceller.start();
  };

  return {
    keys,
    store,
    stream,
    orders,
    voucherService,
    controls,
    orderService,
    limits,
    worker,
    canceller,
    routes,
    startJobs,
    /** For an app instance: publishes unfinished sales (best effort), then runs the jobs if SECKILL_WORKER is on. */
    async start(): Promise<void> {
      // A voucher missing from Redis is also published on its first order.
      try {
        const published = await voucherService.publishUnfinished();
        if (published > 0) log.info({ published }, 'published seckill vouchers missing from Redis');
      } catch (err) {
        log.warn({ err }, 'could not publish unfinished seckill vouchers at start');
      }
      if (settings.workerEnabled) startJobs();
    },
    /** Stops the jobs (finishing the batch in hand) and closes the sale's own connections. */
    async close(): Promise<void> {
      soldOut.stop();
      await worker.stop();
      await canceller.stop();
      await store.close();
      await ownLocks?.close();
    },
  };
}

/** Counts orders answered before enough replicas confirmed them, and says so at most once a second. */
function replicaAckTimeoutReporter(metrics: Metrics, log: Log, wanted: number) {
  let lastWarning = 0;
  return (accepted: number, acknowledged: number): void => {
    metrics.replicaAckTimeouts.inc(accepted);
    if (Date.now() - lastWarning < 1000) return;
    lastWarning = Date.now();
    log.warn({ accepted, acknowledged, wanted }, 'seckill: orders answered before enough replicas confirmed them (see seckill_replica_ack_timeouts_total)');
  };
}
