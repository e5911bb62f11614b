import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { hostname } from 'node:os';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import fastifyCors from '@fastify/cors';
import fastifyRateLimit from '@fastify/rate-limit';
import fastifyStatic from '@fastify/static';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from './infra/config.js';
import { secureLoggerOptions } from './infra/logging.js';
import { createMetrics, type Metrics } from './infra/metrics.js';
import type { Db } from './infra/db.js';
import type { RedisClient } from './infra/redis.js';
import { ajvOptions, clientErrorHandler, formatValidationErrors, frameworkErrors, installErrorHandling } from './http/error-handling.js';
import { installOpenApi } from './http/openapi.js';
import { stringifyResult } from './http/result.js';
import { trackRoutes } from './http/route-table.js';
import { APP_HELMET_OPTIONS, securityHeaders } from './http/security-headers.js';
import { serveWeb } from './http/web.js';
import { tooManyRequests } from './http/errors.js';
import { IdGenerator } from './lib/id/index.js';
import { BloomFilter, CacheClient, combineStats, type CacheStats } from './lib/cache/index.js';
import { LockClient, type LockObserver } from './lib/lock/index.js';
import { AdmissionGate, RateLimit, RateLimiter } from './lib/rate-limit/index.js';
import { UnpaidOrderCanceller } from './modules/seckill/canceller.js';
import { OrderLimits } from './modules/seckill/order-limits.js';
import { OrderRepository } from './modules/seckill/order-repository.js';
import { orderRoutes } from './modules/seckill/order-routes.js';
import { OrderService, type Locks } from './modules/seckill/order-service.js';
import { OrderWorker } from './modules/seckill/order-worker.js';
import { SeckillStore } from './modules/seckill/sale-store.js';
import { ShopGeoIndex } from './modules/shops/geo-index.js';
import { ShopRepository } from './modules/shops/shop-repository.js';
import { shopRoutes } from './modules/shops/shop-routes.js';
import { ShopService } from './modules/shops/shop-service.js';
import { ShopTypeRepository } from './modules/shops/shop-type-repository.js';
import { shopTypeRoutes } from './modules/shops/shop-type-routes.js';
import { ShopTypeService } from './modules/shops/shop-type-service.js';
import { VoucherRepository } from './modules/seckill/voucher-repository.js';
import { voucherRoutes } from './modules/seckill/voucher-routes.js';
import { VoucherService } from './modules/seckill/voucher-service.js';
import { healthRoutes } from './modules/health/routes.js';
import { BlogRepository } from './modules/social/blog-repository.js';
import { blogRoutes } from './modules/social/blog-routes.js';
import { BlogService } from './modules/social/blog-service.js';
import { FollowRepository } from './modules/social/follow-repository.js';
import { followRoutes } from './modules/social/follow-routes.js';
import { FollowService } from './modules/social/follow-service.js';
import { signRoutes } from './modules/social/sign-routes.js';
import { SignService } from './modules/social/sign-service.js';
import { UploadRepository } from './modules/social/upload-repository.js';
import { uploadRoutes } from './modules/social/upload-routes.js';
import { UploadService } from './modules/social/upload-service.js';
import { recordVisitHook, uvRoutes } from './modules/social/uv-routes.js';
import { UvService } from './modules/social/uv-service.js';
import { installAuthHooks } from './modules/users/auth.js';
import { LoginCodeStore } from './modules/users/login-code-store.js';
import { UserRepository } from './modules/users/user-repository.js';
import { userRoutes } from './modules/users/user-routes.js';
import { UserService } from './modules/users/user-service.js';
import { SessionStore } from './modules/users/session-store.js';
import { LogSmsSender, type SmsSender } from './modules/users/sms-sender.js';

export interface AppDeps {
  config: Config;
  redis: RedisClient;
  db: Db;
  /** Defaults to a sender that logs the code. */
  sms?: SmsSender;
  logger?: FastifyServerOptions['logger'];
  /** Distributed locks for the sync seckill strategy. */
  locks?: Locks;
  /** Consumer name of this instance's order worker (stable across restarts). */
  consumerName?: string;
  /** Defaults to a registry of this app's own. */
  metrics?: Metrics;
  /** Defaults to the MySQL repository; tests wrap it to count or slow down loads. */
  shopRepository?: ShopRepository;
  /** Receives cache events besides the Prometheus counter (tests, tools). */
  cacheStats?: CacheStats;
  /** Clock of the social features (feed scores, like times, sign-in and UV days); tests pin it. */
  now?: () => number;
  /** Built web front end served at `/` (default web/dist of the repository; missing → not served). */
  webRoot?: string;
}

const REQUEST_ID = /^[\w.:-]{1,64}$/;

/**
 * The HTTP application, without listening. Connections are passed in and owned by the caller
 * (main.ts or a test), which closes them after `app.close()`.
 */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, redis, db } = deps;
  const app = Fastify({
    // Tokens redacted, phone numbers masked (src/infra/logging.ts), whoever supplies the options.
    logger: secureLoggerOptions(deps.logger, config.logLevel),
    trustProxy: config.trustProxy,
    bodyLimit: config.http.bodyLimitBytes,
    requestTimeout: config.http.requestTimeoutMs,
    connectionTimeout: config.http.connectionTimeoutMs,
    keepAliveTimeout: config.http.keepAliveTimeoutMs,
    ajv: ajvOptions,
    schemaErrorFormatter: formatValidationErrors,
    frameworkErrors,
    clientErrorHandler,
    // Keep a caller's (load balancer's) request id, if it looks sane, so one id follows a
    // request through the logs of every hop.
    genReqId: (request) => {
      const incoming = request.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    return503OnClosing: true,
  }).withTypeProvider<TypeBoxTypeProvider>();

  const metrics = deps.metrics ?? createMetrics();
  app.setReplySerializer(stringifyResult);
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched'; // the pattern, never the raw URL: bounded labels
    metrics.httpDuration.observe({ method: request.method, route, status: reply.statusCode }, reply.elapsedTime / 1000);
  });
  // Security headers (helmet's, computed once: src/http/security-headers.ts) and the request id,
  // in one synchronous hook before the handler, so that a route may still replace any of them.
  const headers = securityHeaders(APP_HELMET_OPTIONS);
  app.addHook('onRequest', (request, reply, done) => {
    reply.headers(headers).header('x-request-id', request.id);
    done();
  });
  installErrorHandling(app);
  // A JSON API (and multipart on the upload route): a text/plain body is refused with 415 rather
  // than parsed and ignored (Fastify parses text/plain by default).
  app.removeContentTypeParser('text/plain');
  // Before any route: both record routes as they are registered.
  trackRoutes(app);
  await installOpenApi(app);
  await installCors(app, config);

  const limiter = new RateLimiter(redis, { onReject: (rule) => metrics.rateLimitRejections.inc({ limit: rule }) });
  const sessions = new SessionStore(redis, config.auth.sessionTtlSeconds);
  const userService = new UserService({
    users: new UserRepository(db),
    sessions,
    codes: new LoginCodeStore(redis, {
      ttlSeconds: config.auth.loginCodeTtlSeconds,
      maxAttempts: config.auth.loginCodeMaxAttempts,
    }),
    sms: deps.sms ?? new LogSmsSender(app.log),
    phoneLimit: new RateLimit(limiter, [
      // SMS_INTERVAL_SECONDS=0 turns the interval off (limit 0), like every other limit.
      { name: 'sms:phone:interval', limit: config.auth.smsIntervalSeconds > 0 ? 1 : 0, windowSeconds: Math.max(1, config.auth.smsIntervalSeconds) },
      { name: 'sms:phone:daily', limit: config.auth.smsDailyLimitPerPhone, windowSeconds: 24 * 3600 },
    ]),
    ipLimit: new RateLimit(limiter, [
      { name: 'sms:ip:hourly', limit: config.auth.smsHourlyLimitPerIp, windowSeconds: 3600 },
    ]),
  });
  const orderLimits = new OrderLimits(
    limiter,
    new AdmissionGate(redis, {
      name: 'sale',
      ratePerSecond: config.rateLimit.saleAdmissionPerSecond,
      onReject: () => metrics.rateLimitRejections.inc({ limit: 'sale:admission' }),
    }),
    { perUser: config.rateLimit.orderPerUser, perIp: config.rateLimit.orderPerIp },
  );

  // One LockClient per process (its subscriber connection and watchdogs are shared): the sync
  // seckill strategy's per-user locks and the cache's rebuild locks both use it.
  const locks = new LockClient(redis, { observer: lockMetrics(metrics) });
  const seckill = buildSeckill({ ...deps, metrics, locks: deps.locks ?? locks }, app.log);
  app.addHook('onReady', async () => {
    // Best effort: a voucher missing from Redis is also published on its first order.
    try {
      const published = await seckill.voucherService.publishUnfinished();
      if (published > 0) app.log.info({ published }, 'published seckill vouchers missing from Redis');
    } catch (err) {
      app.log.warn({ err }, 'could not publish unfinished seckill vouchers at start');
    }
    if (config.seckill.workerEnabled) {
      seckill.worker.start();
      seckill.canceller.start();
    }
  });
  const shops = buildShops({ ...deps, metrics }, locks, app.log);
  app.addHook('onReady', async () => {
    if (!config.shop.bloom) return;
    // Best effort: without a usable filter nothing is rejected, reads just go to the cache and MySQL.
    try {
      const added = await shops.shopService.ensureBloomFilter();
      if (added !== null) app.log.info({ shops: added }, 'built the shop Bloom filter');
    } catch (err) {
      app.log.warn({ err }, 'could not build the shop Bloom filter at start');
    }
  });
  app.addHook('onClose', async () => {
    await shops.caches.idle();
    await seckill.worker.stop();
    await seckill.canceller.stop();
    await seckill.store.close();
    await locks.close();
  });

  // Outside /api: a load balancer routes /api to users and leaves /metrics to the scraper.
  app.get('/metrics', async (_request, reply) => {
    for (const { shard, length, pending, lag, deadLetters } of await seckill.store.streamStats()) {
      const labels = { shard: String(shard) };
      metrics.streamLength.set(labels, length);
      metrics.streamPending.set(labels, pending);
      metrics.consumerLag.set(labels, lag ?? -1);
      metrics.deadLetters.set(labels, deadLetters);
    }
    return reply.type(metrics.registry.contentType).serializer(String).send(await metrics.registry.metrics());
  });

  const social = buildSocial(deps, app.log);
  app.addHook('onClose', async () => {
    await social.uvService.flush().catch((err: unknown) => app.log.warn({ err }, 'could not write the last unique visitors'));
  });
  // Uploaded images, public and outside /api like hmdp's nginx /imgs/ folder.
  mkdirSync(social.uploadService.root, { recursive: true });
  await app.register(fastifyStatic, { root: social.uploadService.root, prefix: '/imgs/', decorateReply: false, index: false, dotfiles: 'deny' });

  await app.register(
    async (api) => {
      if (config.rateLimit.apiPerIp > 0) await installApiRateLimit(api, deps, metrics);
      installAuthHooks(api, sessions);
      if (config.social.uvTracking) api.addHook('onResponse', recordVisitHook(social.uvService));
      await api.register(healthRoutes, { redis, db });
      await api.register(userRoutes, { service: userService });
      await api.register(voucherRoutes, { service: seckill.voucherService });
      await api.register(orderRoutes, { service: seckill.orderService, limits: orderLimits });
      await api.register(shopTypeRoutes, { service: shops.shopTypeService });
      await api.register(shopRoutes, { service: shops.shopService });
      await api.register(followRoutes, { service: social.followService });
      await api.register(blogRoutes, { service: social.blogService });
      await api.register(signRoutes, { service: social.signService });
      await api.register(uvRoutes, { service: social.uvService });
      await api.register(uploadRoutes, { service: social.uploadService, maxBytes: config.upload.maxBytes });
    },
    { prefix: '/api' },
  );
  // The web front end (web/dist) at `/`, with the single-page app's fallback for other GETs.
  await serveWeb(app, deps.webRoot);
  return app;
}

/**
 * CORS, only when origins are configured: without any, no CORS header is ever sent (browsers
 * then allow the same origin only), and the plugin's per-request hook is not paid for.
 */
async function installCors(app: FastifyInstance, config: Config): Promise<void> {
  if (config.http.corsOrigins.length === 0) return;
  await app.register(fastifyCors, {
    origin: config.http.corsOrigins,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'DELETE'],
    allowedHeaders: ['authorization', 'content-type', 'x-request-id'],
    exposedHeaders: ['retry-after', 'x-request-id'],
    maxAge: 600,
  });
}

/**
 * A general per-IP limit on /api (@fastify/rate-limit, its Redis store: one script call per
 * request, key `rl:api:ip:{ip}`). The order route is left out: it has its own, cheaper limits.
 */
async function installApiRateLimit(api: FastifyInstance, deps: AppDeps, metrics: Metrics): Promise<void> {
  const { config, redis } = deps;
  await api.register(fastifyRateLimit, {
    max: config.rateLimit.apiPerIp,
    timeWindow: config.rateLimit.apiWindowSeconds * 1000,
    redis,
    nameSpace: 'rl:api:ip:',
    keyGenerator: (request) => request.ip,
    onExceeded: () => metrics.rateLimitRejections.inc({ limit: 'api:ip' }),
    errorResponseBuilder: (_request, context) => tooManyRequests(`Too many requests from this address: try again in ${Math.max(1, Math.ceil(context.ttl / 1000))} s`, context.ttl),
  });
}

/** Lock waits into lock_wait_seconds, labelled by the lock's family (its name up to the first colon). */
function lockMetrics(metrics: Metrics): LockObserver {
  return {
    onAcquire: ({ name, kind, outcome, waitedMs }) => {
      const family = name.split(':', 1)[0] ?? name;
      metrics.lockWait.observe({ lock: family, kind, outcome }, waitedMs / 1000);
    },
  };
}

/** Vouchers, orders and the background jobs that move orders from Redis to MySQL. */
export function buildSeckill(deps: AppDeps, log: FastifyInstance['log']) {
  const { config, redis, db } = deps;
  const metrics = deps.metrics ?? createMetrics();
  let lastAckWarning = 0;
  const store = new SeckillStore(redis, config.seckill.streamShards, {
    acks: config.seckill.replicaAcks,
    timeoutMs: config.seckill.replicaTimeoutMs,
    onTimeout: (accepted, acknowledged) => {
      metrics.replicaAckTimeouts.inc(accepted);
      // At most one line a second: a lagging replica would otherwise log every batch.
      if (Date.now() - lastAckWarning < 1000) return;
      lastAckWarning = Date.now();
      log.warn({ accepted, acknowledged, wanted: config.seckill.replicaAcks }, 'seckill: orders answered before enough replicas confirmed them (see seckill_replica_ack_timeouts_total)');
    },
  });
  const vouchers = new VoucherRepository(db);
  const orders = new OrderRepository(db);
  const voucherService = new VoucherService(vouchers, store);
  // The sync strategy takes a per-user lock; the async one needs none.
  const ownLocks = !deps.locks && config.seckill.strategy === 'sync' ? new LockClient(redis, { observer: lockMetrics(metrics) }) : undefined;
  const locks = deps.locks ?? ownLocks;
  const orderService = new OrderService({
    strategy: config.seckill.strategy,
    ids: new IdGenerator(redis, { blockSize: config.idBlockSize }),
    store,
    orders,
    vouchers,
    ...(locks ? { locks } : {}),
    countOutcome: (strategy, outcome) => metrics.seckillRequests.inc({ strategy, outcome }),
  });
  const worker = new OrderWorker(redis, store, orders, {
    consumer: deps.consumerName ?? (config.seckill.consumer || `${hostname()}:${config.port}`),
    batchSize: config.seckill.workerBatchSize,
    maxDeliveries: config.seckill.maxDeliveries,
    claimIdleMs: config.seckill.claimIdleMs,
    log,
    onResult: (result) => (result === 'failed' ? metrics.workerFailures.inc() : metrics.ordersWritten.inc({ result })),
  });
  const canceller = new UnpaidOrderCanceller(orders, store, {
    paymentWindowSeconds: config.seckill.paymentWindowSeconds,
    intervalMs: Math.min(30_000, Math.max(1_000, (config.seckill.paymentWindowSeconds * 1000) / 4)),
    log,
  });
  return { store, voucherService, orderService, worker, canceller, orders, ownLocks };
}

/** Shops and shop types on the cache client (src/lib/cache), the GEO index and the Bloom filter. */
export function buildShops(deps: AppDeps, locks: LockClient, log: FastifyInstance['log']) {
  const { config, redis, db } = deps;
  const metrics = deps.metrics ?? createMetrics();
  const caches = new CacheClient(redis, {
    locks,
    stats: combineStats({ record: (cache, result) => metrics.cacheRequests.inc({ cache, result }) }, deps.cacheStats),
    onError: (err, context) => log.warn({ err, ...context }, 'background cache rebuild failed'),
  });
  const shopRepository = deps.shopRepository ?? new ShopRepository(db);
  const typeRepository = new ShopTypeRepository(db);
  const shopService = new ShopService({
    shops: shopRepository,
    types: typeRepository,
    geo: new ShopGeoIndex(redis, shopRepository),
    bloom: new BloomFilter(redis, {
      name: 'shop',
      expectedItems: config.shop.bloomExpectedItems,
      falsePositiveRate: config.shop.bloomFalsePositiveRate,
      locks,
    }),
    caches,
    cache: {
      strategy: config.shop.cacheStrategy,
      ttlMs: config.shop.cacheTtlSeconds * 1000,
      nullTtlMs: config.cache.nullTtlSeconds * 1000,
      jitterPercent: config.cache.ttlJitterPercent,
      waitMs: config.cache.rebuildWaitMs,
      useBloom: config.shop.bloom,
    },
  });
  const shopTypeService = new ShopTypeService(typeRepository, caches, {
    ttlMs: config.shop.typeCacheTtlSeconds * 1000,
    jitterPercent: config.cache.ttlJitterPercent,
    waitMs: config.cache.rebuildWaitMs,
  });
  return { shopService, shopTypeService, caches };
}

/** Blogs, likes, follows, the feed, sign-in, unique visitors and image uploads. */
export function buildSocial(deps: AppDeps, log: FastifyInstance['log']) {
  const { config, redis, db } = deps;
  const now = deps.now ?? Date.now;
  const users = new UserRepository(db);
  const followService = new FollowService(redis, new FollowRepository(db), users);
  const blogService = new BlogService({
    redis,
    blogs: new BlogRepository(db),
    users,
    follows: followService,
    feedMaxLength: config.social.feedMaxLength,
    now,
  });
  return {
    followService,
    blogService,
    signService: new SignService(redis, now),
    uvService: new UvService(redis, now, {
      flushMs: config.social.uvFlushMs,
      onError: (err) => log.warn({ err }, 'could not write unique visitors'),
    }),
    uploadService: new UploadService(new UploadRepository(db), config.upload.dir),
  };
}
