/**
 * The flash sale's one door: `buildSeckill` makes the whole feature from Redis, MySQL, a logger
 * and metrics, and the exports below are all that the app, the CLIs and the bench use of it. The
 * rooms behind it (README.md) are: sale/ (Redis decides), orders/ (the API's orders), writer/
 * (stream → MySQL), record/ (MySQL), unpaid/, admin/, gate/, events/ and vouchers/.
 */
import { hostname } from 'node:os';
import type { FastifyPluginAsync } from 'fastify';
import { answerErrors } from '../../http/error-answers.js';
import type { Config } from '../../infra/config.js';
import type { Db } from '../../infra/db.js';
import type { Log } from '../../infra/logging.js';
import { createMetrics, lockWaitObserver, rateLimiterMetrics, type Metrics } from '../../infra/metrics.js';
import type { RedisClient } from '../../infra/redis.js';
import { cacheChangesChannel } from '../../infra/cache-changes.js';
import { CacheClient, combineStats, type CacheStats } from '../../lib/cache/index.js';
import { IdGenerator } from '../../lib/id/index.js';
import { LockClient } from '../../lib/lock/index.js';
import { PassThroughReader, type KeyReader } from '../../lib/near-cache/index.js';
import { AdmissionLimiter, RateLimit, RateLimiter } from '../../lib/rate-limit/index.js';
import { TokenSigner } from '../../lib/signed-token/index.js';
import { SaleControls } from './admin/sale-controls.js';
import { saleControlRoutes } from './admin/sale-control-routes.js';
import { OrderEventHub } from './events/order-event-hub.js';
import { orderEventRoutes } from './events/order-event-routes.js';
import { RedisOrderEvents } from './events/order-events.js';
import { StreamSeats } from './events/stream-seats.js';
import { CaptchaChallenges } from './gate/captcha-challenges.js';
import { gateRoutes } from './gate/gate-routes.js';
import { GateSettingsCache } from './gate/gate-settings-cache.js';
import { PurchaseGate, type PurchaseGateDeps } from './gate/purchase-gate.js';
import { SpentTokens } from './gate/spent-tokens.js';
import { purchaseTokenKeys } from './gate/token-keys.js';
import { SECKILL_ERROR_ANSWERS } from './error-routes.js';
import { GATE_LIMIT_NAME, LIMIT_NAMES, SaleKeys } from './keys.js';
import { KnownSales } from './orders/known-sales.js';
import { OrderLimits } from './orders/order-limits.js';
import { OrderPlacement, type Locks } from './orders/order-placement.js';
import { orderRoutes } from './orders/order-routes.js';
import { UserOrders } from './orders/user-orders.js';
import type { PersistOutcome } from './record/order-repository.js';
import { VoucherRepository } from './record/voucher-repository.js';
import { buildSale, type Sale } from './sale/sale.js';
import type { SaleSettlement } from './sale/sale-settlement.js';
import { SoldOutMemory } from './sale/sold-out-memory.js';
import { DueTrackedOrders, type DueSchedule } from './unpaid/due-tracked-orders.js';
import { UnpaidCancellations } from './unpaid/unpaid-cancellations.js';
import { UnpaidOrderCanceller } from './unpaid/unpaid-order-canceller.js';
import { UnpaidQueue } from './unpaid/unpaid-queue.js';
import { VoucherService } from './vouchers/voucher-service.js';
import { voucherRoutes } from './vouchers/voucher-routes.js';
import type { AcceptedOrder, NewOrder } from './types.js';
import { OrderStream } from './writer/order-stream.js';
import { OrderWorker } from './writer/order-worker.js';
import { BREAKER_STATES, type WriteBreaker } from './writer/write-breaker.js';
import type { BrokerStatus } from './broker/broker-connection.js';
import type { PublishOutcome } from './broker/confirmed-publisher.js';
import { buildRabbitPath, type RabbitPath } from './broker/rabbit-path.js';

// What the app, the CLIs and the bench use besides buildSeckill.
export { reconcileSeckill, UnknownVoucherError } from './admin/reconcile.js';
export type { ReconcileReport } from './admin/reconcile-report.js';
export { OutcomeUnknown, TemporarilyUnavailable } from './errors/index.js';
export { CAPTCHA_MAX_NUMBER, CaptchaChallenges } from './gate/captcha-challenges.js';
export { homeBucket, ORDER_GROUP, SaleKeys, voucherListCacheKey } from './keys.js';
export { REFUSALS, SECKILL_MESSAGES } from './messages.js';
export { OrderLimits } from './orders/order-limits.js';
export type { Locks } from './orders/order-placement.js';
export { OrderRepository } from './record/order-repository.js';
export type { VoucherRepository } from './record/voucher-repository.js';
export { buildSale, type Sale } from './sale/sale.js';
export { OrderStream } from './writer/order-stream.js';
export type { BrokerStatus } from './broker/broker-connection.js';
export { DEAD_LETTER_QUEUE, ORDER_QUEUE } from './broker/rabbit-topology.js';

export interface SeckillDeps {
  config: Pick<
    Config,
    'seckill' | 'cache' | 'rateLimit' | 'idBlockSize' | 'port' | 'purchaseGate' | 'orderEvents' | 'redisKeyPrefix' | 'nodeEnv' | 'deadlines'
  >;
  redis: RedisClient;
  db: Db;
  log: Log;
  /** Defaults to a registry of its own. */
  metrics?: Metrics;
  /** The sync strategy's per-user locks; without them the sale makes a lock client of its own when it needs one. */
  locks?: Locks;
  /** The process's lock client: the voucher list cache's rebuild locks (default: one of the sale's own, closed with it). */
  lockClient?: LockClient;
  /**
   * The process's near cache, in front of `cache:voucher-list:{shopId}` and of the sale hashes'
   * stock the voucher list reads (default: none, every list read goes to Redis).
   */
  near?: KeyReader;
  /** Defaults to the MySQL repository; tests wrap it to count the list's loads. */
  voucherRepository?: VoucherRepository;
  /** Receives cache events besides the Prometheus counter (tests, tools). */
  cacheStats?: CacheStats;
  /** Consumer name of this process's order worker (default SECKILL_CONSUMER, else `{hostname}:{port}`). */
  consumerName?: string;
}

export type Seckill = ReturnType<typeof buildSeckill>;

/** At most this many open sales in `seckill_stock_left` (the ones ending soonest): a bounded series count. */
const STOCK_GAUGE_VOUCHERS = 50;
/** A captcha challenge unanswered this long expires (longer than altcha-lib's 90 s solver timeout, which the highest cost is set within). */
const CAPTCHA_TTL_SECONDS = 120;

/**
 * The flash sale, whole: vouchers, orders and the jobs that move orders from Redis to MySQL.
 * The app registers `routes` and calls start/close; the standalone worker (src/cli/order-worker.ts)
 * calls startJobs/close and never loads the HTTP server.
 */
export function buildSeckill(deps: SeckillDeps) {
  const { config, redis, db, log } = deps;
  const metrics = deps.metrics ?? createMetrics();
  const settings = config.seckill;
  const keys = new SaleKeys(settings.streamShards, settings.maxBuckets > 1);
  const vouchers = deps.voucherRepository ?? new VoucherRepository(db);
  // Sold-out knowledge lives in the near cache, whose invalidations Redis pushes (none without it: every order asks Redis).
  const soldOut = new SoldOutMemory(keys, deps.near ?? new PassThroughReader(redis), (voucherId) => sale.layouts.routedBuckets(voucherId));
  const sale = buildSale(redis, keys, {
    replicaAcks: {
      acks: settings.replicaAcks,
      timeoutMs: settings.replicaTimeoutMs,
      onTimeout: replicaAckTimeoutReporter(metrics, log, settings.replicaAcks),
      onStepTimeout: (step, acknowledged) =>
        log.warn({ step, acknowledged, wanted: settings.replicaAcks }, 'seckill: a bucket refill step went on before enough replicas confirmed it'),
    },
    // A voucher Redis does not know is published from MySQL on its first order.
    source: (voucherId) => vouchers.findSale(voucherId),
    // Units this instance gave back (or a sale it changed) sell again here at once, not at the next poll.
    onUnitsBack: (voucherId) => soldOut.forget(voucherId),
    maxBatch: settings.reserveBatchMax,
    onBatch: (size) => metrics.reserveBatchSize.observe(size),
    // A bucketed order still refilling is answered 503 "retry" by the sale before the request deadline answers "outcome unknown".
    requestDeadlineMs: config.deadlines.requestMs,
  });
  const stream = new OrderStream(redis, keys);
  // SECKILL_QUEUE=rabbitmq: the relay and the queue's writers replace the worker, built when the jobs start.
  let rabbit: RabbitPath | undefined;
  // Every order written to MySQL (worker batch, RabbitMQ writer or sync request) is scheduled for its cancellation.
  const unpaidQueue = new UnpaidQueue(redis, keys, settings.paymentWindowSeconds * 1000);
  const orders = new DueTrackedOrders(
    db,
    dueScheduleOf(() => rabbit, unpaidQueue, log),
    (err: unknown) => log.warn({ err }, "could not schedule an order's payment deadline; the sweep cancels it if unpaid"),
  );
  // The process's lock client, or one of the sale's own (it opens no connection until a lock is waited for).
  const lockClient = deps.lockClient ?? new LockClient(redis, { observer: lockWaitObserver(metrics) });
  const { voucherService, caches } = buildVoucherService(deps, vouchers, sale, lockClient, metrics);
  const gateSettings = GateSettingsCache.fromDatabase(db);
  // After every control (after the MySQL commit): the gate memory of a changed sale, and the list every instance shows.
  const controls = new SaleControls(db, sale, async (voucherId, changed) => {
    if (changed) gateSettings.forget(voucherId);
    await voucherService.forgetListOf(voucherId);
  });
  const events = new RedisOrderEvents(redis, config.redisKeyPrefix, log);
  const eventHub = new OrderEventHub(redis, config.redisKeyPrefix);
  // The sync strategy takes a per-user lock; the async one needs none.
  const locks = deps.locks ?? (settings.strategy === 'sync' ? lockClient : undefined);
  const placement = new OrderPlacement({
    strategy: settings.strategy,
    ids: new IdGenerator(redis, { blockSize: config.idBlockSize }),
    decider: sale.decider,
    idempotencyKeys: sale.idempotencyKeys,
    settlement: sale.settlement,
    orders,
    ...(locks ? { locks } : {}),
    soldOut,
    countOutcome: (strategy, outcome) => metrics.seckillRequests.inc({ strategy, outcome }),
  });
  const userOrders = new UserOrders({ reads: sale.reads, orders, events });
  const limits = buildOrderLimits(deps, metrics);
  const worker = buildWorker(deps, { stream, settlement: sale.settlement, orders, events, metrics });
  const canceller = buildCanceller(deps, { settlement: sale.settlement, orders, unpaidQueue, events, metrics });
  watchOnScrape(metrics, log, () => rabbit?.writer.breaker ?? worker.breaker, stream, voucherService);
  watchRabbitOnScrape(metrics, () => rabbit, Math.floor(config.deadlines.requestMs / 2));

  const routes: FastifyPluginAsync = async (api) => {
    // First: the routes registered below inherit it (error-routes.ts).
    answerErrors(api, SECKILL_ERROR_ANSWERS);
    // Every sale's id, for the gate's and the order route's refusals of unknown ids.
    const sales = new KnownSales((limit) => vouchers.listSeckillIds(limit));
    // Built with the routes only: the standalone worker needs no token keys.
    const gate = buildPurchaseGate(deps, { settings: gateSettings, sales }, metrics);
    // Every unfinished sale's gate known ahead of its orders, so they need no MySQL (purchase-gate.ts).
    gateSettings.keepLoaded((err: unknown) => log.warn({ err }, 'could not load the gate settings of the unfinished sales; the known ones hold'));
    api.addHook('onClose', async () => gateSettings.stop());
    await api.register(voucherRoutes, { service: voucherService });
    await api.register(saleControlRoutes, { controls });
    await api.register(gateRoutes, { gate });
    await api.register(orderRoutes, { placement, userOrders, limits, sales, gate });
    const { streamsPerUser, heartbeatMs } = config.orderEvents;
    await api.register(orderEventRoutes, {
      hub: eventHub,
      seats: new StreamSeats(redis, streamsPerUser, heartbeatMs * 3),
      streamsPerUser,
      heartbeatMs,
      readOrder: (userId, orderId) => userOrders.get(userId, orderId),
    });
  };

  const startJobs = (): void => {
    if (settings.queue === 'rabbitmq') {
      rabbit ??= buildRabbitPath({
        settings,
        redis,
        stream,
        settlement: sale.settlement,
        orders,
        log,
        consumer: consumerOf(deps),
        ...writerReports(events, metrics),
        cancelDue: (due) => canceller.cancelDue(due, 'rabbitmq'),
      });
      rabbit.start();
    } else {
      worker.start();
    }
    canceller.start();
    // Transfers whose refill died between its steps: their units back where they belong (transfers.ts).
    sale.transfers.startSweeping(settings.transferSweepEveryMs, settings.transferSweepAfterMs, (err: unknown) =>
      log.warn({ err }, 'could not sweep the bucket transfers'),
    );
  };

  return {
    keys,
    sale,
    stream,
    orders,
    voucherService,
    controls,
    placement,
    userOrders,
    limits,
    worker,
    canceller,
    unpaidQueue,
    /** The RabbitMQ path once the jobs started with SECKILL_QUEUE=rabbitmq (tests and tools). */
    get rabbit(): RabbitPath | undefined {
      return rabbit;
    },
    /** For /api/health: RabbitMQ's state, or undefined when this process does not use it (no jobs, or the stream path). */
    brokerStatus: (timeoutMs: number): Promise<BrokerStatus> | undefined => rabbit?.status(timeoutMs),
    routes,
    gateSettings,
    events,
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
      await worker.stop();
      await rabbit?.stop();
      await canceller.stop();
      await sale.close();
      await eventHub.close();
      await caches.idle();
      if (!deps.lockClient) await lockClient.close();
    },
  };
}

interface JobParts {
  settlement: SaleSettlement;
  orders: DueTrackedOrders;
  events: RedisOrderEvents;
  metrics: Metrics;
}

/** This process's name in the streams' consumer group (and on the broker's connection list). */
function consumerOf({ config, consumerName }: SeckillDeps): string {
  return consumerName ?? (config.seckill.consumer || `${hostname()}:${config.port}`);
}

/** What every MySQL writer of orders reports, the order worker or the RabbitMQ writers: results, `created` events, breaker calls. */
function writerReports(events: RedisOrderEvents, metrics: Metrics) {
  return {
    onResult: (result: PersistOutcome | 'dead-letter' | 'failed') =>
      result === 'failed' ? metrics.workerFailures.inc() : metrics.ordersWritten.inc({ result }),
    onWritten: (written: AcceptedOrder[]) => {
      const now = Date.now();
      for (const order of written) metrics.writeLag.observe(Math.max(0, now - order.acceptedMs) / 1000);
      events.changed(written.map((order) => ({ orderId: order.orderId, userId: order.userId, voucherId: order.voucherId, state: 'created' as const })));
    },
    onPublished: (outcome: PublishOutcome) => metrics.relayPublishes.inc({ outcome }),
    breaker: {
      onAttempt: (kind: 'write' | 'probe') => metrics.workerMysqlAttempts.inc({ kind }),
      onFailure: (kind: 'write' | 'probe') => metrics.workerMysqlFailures.inc({ kind }),
    },
  };
}

/** The order worker of this process: stream → MySQL, with its metrics and the `created` events. */
function buildWorker(deps: SeckillDeps, { stream, settlement, orders, events, metrics }: JobParts & { stream: OrderStream }): OrderWorker {
  const settings = deps.config.seckill;
  const { onResult, onWritten, breaker } = writerReports(events, metrics);
  return new OrderWorker(stream, settlement, orders, {
    consumer: consumerOf(deps),
    batchSize: settings.workerBatchSize,
    maxDeliveries: settings.maxDeliveries,
    claimIdleMs: settings.claimIdleMs,
    log: deps.log,
    onResult,
    onWritten,
    breaker,
  });
}

/**
 * Where the orders this process writes wait for the end of their payment window: RabbitMQ's delay
 * queue once the jobs run on it (SECKILL_QUEUE=rabbitmq), else the Redis release queue. Deadlines
 * the broker does not confirm (unreachable, stalled) go to the Redis queue too, which every
 * canceller polls: still cancelled on time, not at the next sweep. A deadline in both is harmless
 * (the cancellation is conditional, the release once per order).
 */
function dueScheduleOf(rabbitOf: () => RabbitPath | undefined, unpaidQueue: UnpaidQueue, log: Log): DueSchedule {
  let lastWarning = 0;
  return {
    async schedule(written: readonly NewOrder[]): Promise<void> {
      const delays = rabbitOf()?.delays;
      if (!delays) return unpaidQueue.schedule(written);
      try {
        await delays.schedule(written);
      } catch (err) {
        if (Date.now() - lastWarning >= 5_000) {
          lastWarning = Date.now();
          log.warn({ err }, 'payment deadlines not confirmed by RabbitMQ; scheduled in the Redis release queue instead');
        }
        await unpaidQueue.schedule(written);
      }
    },
  };
}

/**
 * The canceller of unpaid orders: the Redis release queue (on time), RabbitMQ's release queue when
 * the jobs run on it (`cancelDue`, on time) and the sweep (safety net). The Redis queue is polled in
 * both modes: with SECKILL_QUEUE=rabbitmq it holds the deadlines the broker did not confirm and those
 * of processes without a broker connection (stream-mode workers during a switch, sync writes in a
 * process that runs no jobs).
 */
function buildCanceller(
  { config, db, log }: SeckillDeps,
  { settlement, orders, unpaidQueue, events, metrics }: JobParts & { unpaidQueue: UnpaidQueue },
): UnpaidOrderCanceller {
  const settings = config.seckill;
  return new UnpaidOrderCanceller(orders, settlement, {
    paymentWindowSeconds: settings.paymentWindowSeconds,
    intervalMs: Math.min(30_000, Math.max(1_000, (settings.paymentWindowSeconds * 1000) / 4)),
    cancellations: new UnpaidCancellations(db),
    releaseQueue: { queue: unpaidQueue, pollMs: settings.releasePollMs },
    log,
    onCancelled: (order, latenessMs, by) => {
      metrics.releaseLateness.observe({ by }, Math.max(0, latenessMs) / 1000);
      events.changed([{ orderId: order.orderId, userId: order.userId, voucherId: order.voucherId, state: 'cancelled' }]);
    },
  });
}

/** The voucher list: its cache (rebuild locks on the lock client) read through the near cache, if any. */
function buildVoucherService(deps: SeckillDeps, vouchers: VoucherRepository, sale: Sale, lockClient: LockClient, metrics: Metrics) {
  const { config, redis, log } = deps;
  const caches = new CacheClient(redis, {
    locks: lockClient,
    stats: combineStats({ record: (cache, result) => metrics.cacheRequests.inc({ cache, result }) }, deps.cacheStats),
    onError: (err, context) => log.warn({ err, ...context }, 'background cache rebuild failed'),
    ...(deps.near ? { reader: deps.near } : {}),
    // The edge keeps built voucher lists (L1) and drops one when its record is written.
    changeChannel: cacheChangesChannel(config.redisKeyPrefix),
  });
  const voucherService = new VoucherService(
    vouchers,
    sale,
    {
      caches,
      reader: deps.near ?? new PassThroughReader(redis),
      ttlMs: config.seckill.listCacheTtlSeconds * 1000,
      nullTtlMs: config.cache.nullTtlSeconds * 1000,
      jitterPercent: config.cache.ttlJitterPercent,
      waitMs: config.cache.rebuildWaitMs,
    },
    config.seckill.maxBuckets,
  );
  return { voucherService, caches };
}

/** The order route's limits: the sale's admission rate, then per user and per IP. */
function buildOrderLimits({ redis, config }: SeckillDeps, metrics: Metrics): OrderLimits {
  return new OrderLimits(
    new RateLimiter(redis, rateLimiterMetrics(metrics)),
    new AdmissionLimiter(redis, {
      name: LIMIT_NAMES.admission,
      ratePerSecond: config.rateLimit.saleAdmissionPerSecond,
      onReject: () => metrics.rateLimitRejections.inc({ limit: 'sale:admission' }),
    }),
    { perUser: config.rateLimit.orderPerUser, perIp: config.rateLimit.orderPerIp },
  );
}

function buildPurchaseGate({ redis, config }: SeckillDeps, { settings, sales }: Pick<PurchaseGateDeps, 'settings' | 'sales'>, metrics: Metrics): PurchaseGate {
  const { requestsPerMinute, captchaIterations, tokenTtlSeconds } = config.purchaseGate;
  const keys = purchaseTokenKeys(config);
  return new PurchaseGate({
    signer: new TokenSigner(keys),
    sales,
    settings,
    captcha: new CaptchaChallenges(redis, keys, { iterations: captchaIterations, ttlSeconds: CAPTCHA_TTL_SECONDS }),
    spent: new SpentTokens(redis),
    limit: new RateLimit(
      new RateLimiter(redis, rateLimiterMetrics(metrics)),
      requestsPerMinute > 0 ? [{ name: GATE_LIMIT_NAME, limit: requestsPerMinute, windowSeconds: 60 }] : [],
    ),
    tokenTtlMs: tokenTtlSeconds * 1000,
  });
}

/** The gauges read at scrape time: the MySQL writer's breaker, the streams, and the stock of the open sales. */
function watchOnScrape(metrics: Metrics, log: Log, breakerOf: () => WriteBreaker, stream: OrderStream, voucherService: VoucherService): void {
  metrics.onScrape(async () => {
    const breaker = breakerOf();
    for (const state of BREAKER_STATES) metrics.workerBreakerState.set({ state }, breaker.state === state ? 1 : 0);
    for (const { shard, length, pending, lag, deadLetters, queued } of await stream.stats()) {
      const labels = { shard: String(shard) };
      metrics.ordersQueued.set(labels, queued);
      metrics.streamLength.set(labels, length);
      metrics.streamPending.set(labels, pending);
      metrics.consumerLag.set(labels, lag ?? -1);
      metrics.deadLetters.set(labels, deadLetters);
    }
  });
  metrics.onScrape(async () => {
    // A scrape never fails for it: without MySQL or Redis the gauge is only left empty.
    const open = await voucherService.openSaleStock(STOCK_GAUGE_VOUCHERS).catch((err: unknown) => {
      log.warn({ err }, 'could not read the stock of the open sales for seckill_stock_left');
      return [];
    });
    metrics.stockLeft.reset();
    for (const { voucherId, stock } of open) metrics.stockLeft.set({ voucher_id: voucherId }, stock);
  });
}

/** RabbitMQ as this process sees it, read at scrape time when its jobs run on it (SECKILL_QUEUE=rabbitmq); a stalled broker costs the scrape `timeoutMs` at most. */
function watchRabbitOnScrape(metrics: Metrics, rabbitOf: () => RabbitPath | undefined, timeoutMs: number): void {
  metrics.onScrape(async () => {
    const rabbit = rabbitOf();
    if (!rabbit) return;
    metrics.rabbitmqUp.set({ address: rabbit.broker.address }, rabbit.broker.ready ? 1 : 0);
    for (const { queue, messages } of await rabbit.queueDepths(timeoutMs)) metrics.rabbitmqQueueMessages.set({ queue }, messages ?? -1);
  });
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
