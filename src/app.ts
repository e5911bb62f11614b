import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import fastifyStatic from '@fastify/static';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { installApiRateLimit } from './http/api-rate-limit.js';
import { installCors } from './http/cors.js';
import { installDeadline } from './http/deadline.js';
import { closeOnEarlyAnswers } from './http/early-answers.js';
import { ajvOptions, clientErrorHandler, formatValidationErrors, frameworkErrors, installErrorHandling } from './http/error-handling.js';
import { compatRewriteUrl, installCompatReplies } from './http/hmdp-compat.js';
import { HOST_CHECK_SERVER_OPTIONS, refuseBadHost } from './http/host-header.js';
import { RequestLog } from './http/request-log.js';
import { installLanguages } from './http/language.js';
import { installMetricsRoute } from './http/metrics-route.js';
import { installOpenApi } from './http/openapi.js';
import { MAX_PARAM_LENGTH, refuseLongTargets } from './http/request-target.js';
import { stringifyResult } from './http/result.js';
import { trackRoutes } from './http/route-table.js';
import { validatorPerHttpPart } from './http/validation.js';
import { APP_HELMET_OPTIONS, securityHeaders } from './http/security-headers.js';
import { serveWeb } from './http/web.js';
import type { Config } from './infra/config.js';
import type { Db } from './infra/db.js';
import { secureLoggerOptions } from './infra/logging.js';
import { createMetrics, lockWaitObserver, type Metrics } from './infra/metrics.js';
import { createNearCache } from './infra/near-cache.js';
import type { RedisClient } from './infra/redis.js';
import type { CacheStats } from './lib/cache/index.js';
import { LockClient } from './lib/lock/index.js';
import { healthRoutes } from './modules/health/index.js';
import { buildSeckill, type Locks, type VoucherRepository } from './modules/seckill/index.js';
import { buildShops, type ShopRepository } from './modules/shops/index.js';
import { buildSocial } from './modules/social/index.js';
import { buildUsers, type SmsSender } from './modules/users/index.js';

export interface AppDeps {
  config: Config;
  redis: RedisClient;
  db: Db;
  /** Defaults to the sender SMS_SENDER chooses (src/modules/users/sms-sender.ts). */
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
  /** Defaults to the MySQL repository; tests wrap it to count the voucher list's loads. */
  voucherRepository?: VoucherRepository;
  /** Receives cache events besides the Prometheus counter (tests, tools). */
  cacheStats?: CacheStats;
  /** Clock of the social features (feed scores, like times, sign-in and UV days); tests pin it. */
  now?: () => number;
  /** Built web front end served at `/` (default web/dist of the repository; missing → not served). */
  webRoot?: string;
}

const REQUEST_ID = /^[\w.:-]{1,64}$/;

/**
 * TRUST_PROXY=n: the n hops nearest the app are proxies (what Fastify does with a number, which
 * its types do not declare), so the client is the n-th address from the right of X-Forwarded-For.
 */
const trustHops =
  (hops: number) =>
  (_address: string, hop: number): boolean =>
    hop < hops;

/**
 * Options of Node's HTTP server for HTTP_REQUEST_TIMEOUT_MS: Node checks open requests against the
 * timeout only every connectionsCheckingInterval (30 s by default), so a body trickled a byte at
 * a time held a socket up to twice the timeout; checking every tenth of it (0.1 to 1 s) keeps the
 * bound within a second. headersTimeout must be given here too: set only after the server exists
 * (as Fastify sets the request timeout), it stays 60 s and Node expires no request before that.
 * 0 (no timeout): Node's defaults.
 */
const requestTimeoutOptions = (requestTimeoutMs: number) =>
  requestTimeoutMs === 0
    ? {}
    : {
        requestTimeout: requestTimeoutMs,
        headersTimeout: Math.min(60_000, requestTimeoutMs),
        connectionsCheckingInterval: Math.min(1_000, Math.max(100, Math.round(requestTimeoutMs / 10))),
      };

/**
 * The HTTP application, without listening. Connections are passed in and owned by the caller
 * (main.ts or a test), which closes them after `app.close()`.
 */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, redis, db } = deps;
  const app = Fastify({
    // Tokens redacted, phone numbers masked (src/infra/logging.ts), whoever supplies the options.
    logger: secureLoggerOptions(deps.logger, config.logLevel),
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
    bodyLimit: config.http.bodyLimitBytes,
    requestTimeout: config.http.requestTimeoutMs,
    // Slow bodies get 408 within the timeout plus a second (see requestTimeoutOptions).
    http: { ...HOST_CHECK_SERVER_OPTIONS, ...requestTimeoutOptions(config.http.requestTimeoutMs) },
    connectionTimeout: config.http.connectionTimeoutMs,
    keepAliveTimeout: config.http.keepAliveTimeoutMs,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    ajv: ajvOptions,
    // Query strings and params are coerced to their schema types, JSON bodies are not. Response
    // schemas document the answers (OpenAPI, the web app's types) and compile to nothing: every
    // answer is written by stringifyResult (setReplySerializer below), as the handler returned it.
    schemaController: { compilersFactory: { buildValidator: validatorPerHttpPart(), buildSerializer: () => () => stringifyResult } },
    schemaErrorFormatter: formatValidationErrors,
    frameworkErrors: frameworkErrors(config.defaultLanguage),
    clientErrorHandler: clientErrorHandler(config.defaultLanguage),
    // Keep a caller's (load balancer's) request id, if it looks sane, so one id follows a
    // request through the logs of every hop.
    genReqId: (request) => {
      const incoming = request.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    return503OnClosing: true,
    // One line per request at most, ours, in place of Fastify's two.
    logController: new RequestLog(config.requestLog),
    ...(config.hmdpCompat ? { rewriteUrl: compatRewriteUrl } : {}),
  }).withTypeProvider<TypeBoxTypeProvider>();

  const metrics = deps.metrics ?? createMetrics();
  // First of the onRequest hooks: the deadline covers them too (the session lookup reads Redis).
  installDeadline(app, config.deadlines.requestMs);
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
  refuseBadHost(app);
  refuseLongTargets(app);
  closeOnEarlyAnswers(app);
  installLanguages(app, config.defaultLanguage);
  installErrorHandling(app);
  if (config.hmdpCompat) installCompatReplies(app);
  // A JSON API (and multipart on the upload route): a text/plain body is refused with 415 rather
  // than parsed and ignored (Fastify parses text/plain by default).
  app.removeContentTypeParser('text/plain');
  // Before any route: both record routes as they are registered.
  trackRoutes(app);
  await installOpenApi(app);
  await installCors(app, config.http.corsOrigins);

  // One LockClient per process (its subscriber connection and watchdogs are shared): the sync
  // seckill strategy's per-user locks and the caches' rebuild locks both use it.
  const locks = new LockClient(redis, { observer: lockWaitObserver(metrics) });
  const log = app.log;
  // One near cache per process in front of Redis for shops, shop types, voucher lists and sessions.
  const near = createNearCache(config.nearCache, redis, metrics, log);
  const users = buildUsers({ config, redis, db, log, metrics, sms: deps.sms, near: near.reader });
  const seckill = buildSeckill({
    config,
    redis,
    db,
    log,
    metrics,
    locks: deps.locks ?? locks,
    lockClient: locks,
    consumerName: deps.consumerName,
    voucherRepository: deps.voucherRepository,
    cacheStats: deps.cacheStats,
    near: near.reader,
  });
  const shops = buildShops({ config, redis, db, log, metrics, locks, shopRepository: deps.shopRepository, cacheStats: deps.cacheStats, near: near.reader });
  const social = buildSocial({ config, redis, db, log, metrics, now: deps.now });
  app.addHook('onReady', async () => {
    await near.start();
    await seckill.start();
    await shops.start();
    social.start();
  });
  app.addHook('onClose', async () => {
    await shops.close();
    await seckill.close();
    await social.close();
    await locks.close();
    await near.close();
  });

  installMetricsRoute(app, metrics, config.metricsToken);
  // Uploaded images, public and outside /api like hmdp's nginx /imgs/ folder.
  mkdirSync(social.uploadService.root, { recursive: true });
  await app.register(fastifyStatic, { root: social.uploadService.root, prefix: '/imgs/', decorateReply: false, index: false, dotfiles: 'deny' });

  await app.register(
    async (api) => {
      if (config.rateLimit.apiPerIp > 0) {
        await installApiRateLimit(api, {
          redis,
          perIp: config.rateLimit.apiPerIp,
          windowSeconds: config.rateLimit.apiWindowSeconds,
          onExceeded: () => metrics.rateLimitRejections.inc({ limit: 'api:ip' }),
        });
      }
      users.authenticate(api);
      if (social.recordVisit) api.addHook('onRoute', social.recordVisit);
      await api.register(healthRoutes, { redis, db, probeTimeoutMs: Math.floor(config.deadlines.requestMs / 2), broker: seckill.brokerStatus });
      await api.register(users.routes);
      await api.register(seckill.routes);
      await api.register(shops.routes);
      await api.register(social.routes);
    },
    { prefix: '/api' },
  );
  // The web front end (web/dist) at `/`, with the single-page app's fallback for other GETs.
  await serveWeb(app, deps.webRoot);
  return app;
}
