/**
 * Every environment variable the app reads, declared once: name, type, default, bounds and the
 * README's words (`doc`, `shown`). `Config` is the shape of this tree, `loadConfig` reads it in
 * this order, and the README's configuration table lists it in this order (npm run docs:config).
 */
import { ConfigError, bool, custom, decimal, int, list, oneOf, optionalOneOf, secret, str, url, type Get, type SettingsTree } from './fields.js';
import {
  DEFAULT_SMS_BODY,
  checkHeaderName,
  checkSmsBody,
  isHostPort,
  isOrigin,
  parseRabbitmqUrls,
  parseSigningKeys,
  parseTrustProxy,
  type SigningKey,
} from './parsers.js';

/** Variables that no longer do anything: setting one stops the process with what to do instead. */
export const RETIRED_ENV_VARS: Readonly<Record<string, string>> = {
  ADMIN_USER_IDS: 'administrators are a role in tb_user now: npm run admin -- grant <phone>',
  PURCHASE_CAPTCHA_MAX_NUMBER:
    "a captcha's cost is a setting of each sale now, captchaMaxNumber of POST /api/voucher/seckill and PATCH /api/voucher/seckill/{id} (migration 0010 gave existing sales 400): unset it and PATCH the sales that need another cost",
};

// The settings that others depend on are named here, before the tree that places them.

const nodeEnv = oneOf({
  env: 'NODE_ENV',
  values: ['development', 'production', 'test'],
  default: 'development',
  doc: '`development`, `production` or `test` (`test`: `LOG_LEVEL` defaults to `silent`)',
});

const requestDeadlineMs = int({
  env: 'REQUEST_DEADLINE_MS',
  default: 2_000,
  min: 100,
  max: 600_000,
  doc: 'a request still unanswered after this gets 503 + `Retry-After` (a stalled Redis or MySQL never hangs a request; see docs/operations.md)',
});

// Each dependency's bound is below the request's, so the handler answers (and names the
// dependency) before the deadline's generic 503 does.
const dependencyBound = {
  default: (get: Get) => Math.floor(get(requestDeadlineMs) / 2),
  shown: 'half of `REQUEST_DEADLINE_MS`',
  min: 10,
  max: (get: Get) => get(requestDeadlineMs),
};

const keepAliveTimeoutMs = int({
  env: 'HTTP_KEEP_ALIVE_TIMEOUT_MS',
  default: 72_000,
  min: 1,
  max: 3_600_000,
  doc: "idle keep-alive connections are closed after this; behind nginx or a load balancer it must exceed the proxy's idle timeout for upstream connections (nginx `keepalive_timeout`, 60 s by default), or the proxy may reuse a connection the app is closing (sporadic 502)",
});

const smsHttpUrl = url({
  env: 'SMS_HTTP_URL',
  default: '',
  protocols: ['http:', 'https:'],
  example: 'https://sms.example.com/send',
  doc: 'SMS gateway endpoint (`SMS_SENDER=http`; required then; `https://` in production unless loopback): a JSON `POST` per code; non-2xx or timeout → 503',
});

export const SETTINGS = {
  nodeEnv,
  host: str({ env: 'HOST', default: '0.0.0.0', doc: 'address the HTTP server listens on' }),
  port: int({ env: 'PORT', default: 8081, min: 0, max: 65535, doc: 'port the HTTP server listens on' }),
  redisUrl: url({ env: 'REDIS_URL', default: 'redis://127.0.0.1:6379/0', protocols: ['redis:', 'rediss:'], doc: 'standalone Redis' }),
  redisClusterNodes: list({
    env: 'REDIS_CLUSTER_NODES',
    default: [],
    isItem: isHostPort,
    expected: 'a comma-separated list of host:port',
    doc: '`host:port,...` of a Redis Cluster; replaces `REDIS_URL`',
  }),
  redisKeyPrefix: str({ env: 'REDIS_KEY_PREFIX', default: '', doc: 'prefix for every key (several apps or test runs on one Redis)' }),
  mysqlUrl: url({ env: 'MYSQL_URL', default: 'mysql://root@127.0.0.1:3306/hmdp', protocols: ['mysql:'], doc: 'MySQL 8 or MariaDB 10.11' }),
  mysqlPoolSize: int({ env: 'MYSQL_POOL_SIZE', default: 10, min: 1, max: 1000, doc: 'connections per instance' }),
  logLevel: oneOf({
    env: 'LOG_LEVEL',
    values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
    default: (get) => (get(nodeEnv) === 'test' ? 'silent' : 'info'),
    shown: '`info` (`silent` in tests)',
    doc: 'pino level',
  }),
  requestLog: {
    lines: oneOf({
      env: 'LOG_REQUESTS',
      values: ['slow', 'all'],
      default: 'slow',
      doc: "the app's line per request: `slow` writes one (at `warn`) only for a request answered 5xx or slower than `LOG_SLOW_REQUEST_MS`; `all` one for every request (at `info`), at a cost in CPU per request ([docs/operations.md](docs/operations.md#logs)); the nginx in front writes the access log",
    }),
    slowMs: int({
      env: 'LOG_SLOW_REQUEST_MS',
      default: 1_000,
      min: 0,
      max: 3_600_000,
      doc: 'a request answered after this long is logged (`0`: every request)',
    }),
  },
  /** Never `true`: that believes the left-most address of X-Forwarded-For, which the client writes. */
  trustProxy: custom<boolean | number | string>({
    env: 'TRUST_PROXY',
    default: false,
    parse: parseTrustProxy,
    doc: 'proxies whose `X-Forwarded-For` names the client: their number in front of the app (`1` behind one nginx that appends `$remote_addr`) or their addresses/CIDRs (`127.0.0.1`). `true` is refused: it believes the left-most address, which the client writes ([docs/operations.md](docs/operations.md#client-ip-behind-a-proxy))',
  }),
  auth: {
    sessionTtlSeconds: int({ env: 'SESSION_TTL_SECONDS', default: 30 * 60, min: 1, doc: 'session lifetime after the last request' }),
    sessionMaxAgeSeconds: int({
      env: 'SESSION_MAX_AGE_SECONDS',
      default: 12 * 3600,
      min: 1,
      max: 366 * 86_400,
      doc: 'absolute session lifetime from the login, however active (12 h: OWASP ASVS level 2); `POST /api/user/logout-all` ends every session sooner',
    }),
    loginCodeTtlSeconds: int({ env: 'LOGIN_CODE_TTL_SECONDS', default: 2 * 60, min: 1, doc: 'login code lifetime' }),
    loginCodeMaxAttempts: int({ env: 'LOGIN_CODE_MAX_ATTEMPTS', default: 5, min: 1, max: 100, doc: 'wrong codes before a code is burnt' }),
    smsIntervalSeconds: int({ env: 'SMS_INTERVAL_SECONDS', default: 60, min: 0, doc: 'minimum gap between two codes for one phone (`0`: none)' }),
    smsDailyLimitPerPhone: int({ env: 'SMS_DAILY_LIMIT_PER_PHONE', default: 10, min: 0, doc: 'codes per phone per 24 h (`0`: no cap)' }),
    smsHourlyLimitPerIp: int({ env: 'SMS_HOURLY_LIMIT_PER_IP', default: 30, min: 0, doc: 'codes per client IP per hour (`0`: no cap)' }),
  },
  sms: {
    /** Undefined when unset: src/modules/users/sms-sender.ts then logs outside production and refuses to start in production. */
    sender: optionalOneOf({
      env: 'SMS_SENDER',
      values: ['log', 'http'],
      shown: '(empty: `log`; refused in production)',
      check: (sender, { get }) => {
        if (sender === 'http' && get(smsHttpUrl) === '') throw new ConfigError('SMS_SENDER=http needs SMS_HTTP_URL (the gateway endpoint)');
      },
      doc: 'how login codes are sent: `http` (the gateway below) or `log` (the code is logged only when `NODE_ENV=development`). Production refuses to start unless it is set, so `log` there must be chosen explicitly',
    }),
    http: {
      url: smsHttpUrl,
      authHeader: str({
        env: 'SMS_HTTP_AUTH_HEADER',
        default: 'authorization',
        trim: true,
        check: checkHeaderName,
        doc: 'request header carrying `SMS_HTTP_AUTH_TOKEN`',
      }),
      authToken: str({
        env: 'SMS_HTTP_AUTH_TOKEN',
        default: '',
        secret: true,
        doc: 'credential sent in `SMS_HTTP_AUTH_HEADER` (e.g. `Bearer …`; empty: no header). Never logged',
      }),
      bodyTemplate: str({
        env: 'SMS_HTTP_BODY',
        default: DEFAULT_SMS_BODY,
        shown: '`{"phone":"{{phone}}","message":"…{{code}}…{{minutes}}…"}`',
        check: checkSmsBody,
        doc: 'JSON body of the gateway request; `{{phone}}`, `{{code}}` and `{{minutes}}` (code lifetime) are filled in',
      }),
      timeoutMs: int({
        env: 'SMS_HTTP_TIMEOUT_MS',
        default: 5000,
        min: 1,
        max: 60_000,
        doc: 'longest wait for the gateway; then the code is withdrawn and the client gets 503',
      }),
    },
  },
  /** Rate limits on Redis, shared by all instances; every one is off at 0. */
  rateLimit: {
    orderPerUser: int({
      env: 'ORDER_RATE_LIMIT_PER_USER',
      default: 5,
      min: 0,
      doc: "seckill order requests per user per second, all instances together; more → 429 (`0`: off). A buyer's first request of a second is let through by the instance without a Redis command, so with N instances up to 5 + N pass",
    }),
    orderPerIp: int({
      env: 'ORDER_RATE_LIMIT_PER_IP',
      default: 200,
      min: 0,
      doc: 'seckill order requests per client IP per second (see `TRUST_PROXY`; `0`: off); likewise up to 5 % more per instance',
    }),
    saleAdmissionPerSecond: int({
      env: 'SECKILL_ADMISSION_RATE',
      default: 20_000,
      min: 0,
      doc: 'order requests admitted per sale (voucher) per second across all instances; the rest get 429 without touching the sale in Redis. Set it below what your Redis sustains for `reserve.lua` (`0`: off)',
    }),
    apiPerIp: int({
      env: 'API_RATE_LIMIT_PER_IP',
      default: 0,
      shown: '`0` (off)',
      min: 0,
      doc: "requests to `/api` per client IP per window (@fastify/rate-limit on Redis; the order route has its own limits). Usually the edge proxy's job; turn it on when there is none",
    }),
    apiWindowSeconds: int({ env: 'API_RATE_LIMIT_WINDOW_SECONDS', default: 60, min: 1, max: 86_400, doc: 'window of `API_RATE_LIMIT_PER_IP`' }),
  },
  metricsToken: secret({
    env: 'METRICS_TOKEN',
    minLength: 16,
    shown: '(empty: no `/metrics`)',
    doc: 'bearer token the Prometheus scraper sends to `GET /metrics` (`authorization: Bearer <token>`, at least 16 characters); without it the route does not exist',
  }),
  workerMetricsPort: int({
    env: 'WORKER_METRICS_PORT',
    default: 0,
    shown: '`0` (none)',
    min: 0,
    max: 65535,
    doc: 'port (on `HOST`) where a standalone order worker (`src/cli/order-worker.ts`) serves `GET /metrics` to a scraper holding `METRICS_TOKEN`',
  }),
  hmdpCompat: bool({
    env: 'HMDP_COMPAT',
    default: false,
    doc: "the course's own front end and nginx config unchanged: the API also served without `/api`, refusals there answered 200 with `success: false`, the editor's `/imgs/…` picture names accepted by the delete and the publish ([docs/http.md](docs/http.md#hmdp-compatibility-mode))",
  }),
  defaultLanguage: oneOf({
    env: 'DEFAULT_LANGUAGE',
    values: ['zh', 'en'],
    default: 'zh',
    doc: '`zh` or `en`: the language of `errorMsg` when a request has no `Accept-Language` or names neither Chinese nor English ([docs/http.md](docs/http.md#languages))',
  }),
  http: {
    corsOrigins: list({
      env: 'CORS_ORIGINS',
      default: [],
      shown: '(empty: same origin only)',
      isItem: isOrigin,
      skipEmpty: true,
      expected: 'a comma-separated list of origins like https://shop.example.com (scheme, host, optional port; no path)',
      doc: 'comma-separated origins (`https://shop.example.com`) whose pages may call the API from a browser',
    }),
    bodyLimitBytes: int({
      env: 'BODY_LIMIT_BYTES',
      default: 64 * 1024,
      min: 1024,
      max: 100 * 1024 * 1024,
      doc: 'largest JSON request body (larger → 413); image uploads are bounded by `UPLOAD_MAX_BYTES`',
    }),
    requestTimeoutMs: int({
      env: 'HTTP_REQUEST_TIMEOUT_MS',
      default: 30_000,
      min: 0,
      max: 3_600_000,
      doc: 'longest time to receive a whole request (slow clients get 408; `0`: none)',
    }),
    connectionTimeoutMs: int({
      env: 'HTTP_CONNECTION_TIMEOUT_MS',
      default: 120_000,
      min: 0,
      max: 3_600_000,
      // An idle keep-alive socket is also an inactive one: a shorter connection timeout would cut it first.
      check: (timeoutMs, { get, refuse }) => {
        const keepAliveMs = get(keepAliveTimeoutMs);
        if (timeoutMs !== 0 && timeoutMs <= keepAliveMs) refuse(`0 or more than HTTP_KEEP_ALIVE_TIMEOUT_MS (${keepAliveMs})`);
      },
      doc: 'socket inactivity before the connection is closed (`0`: none; must exceed the keep-alive timeout)',
    }),
    keepAliveTimeoutMs,
  },
  /** How long anything may wait (docs/operations.md "Deadlines"): a stalled dependency costs a fast 503, never a hung request. */
  deadlines: {
    requestMs: requestDeadlineMs,
    /** Also the TCP connect bound of Redis. */
    redisCommandMs: int({
      env: 'REDIS_COMMAND_TIMEOUT_MS',
      ...dependencyBound,
      doc: 'a Redis command without a reply after this fails (503 naming Redis); at most `REQUEST_DEADLINE_MS`',
    }),
    mysqlQueryMs: int({
      env: 'MYSQL_QUERY_TIMEOUT_MS',
      ...dependencyBound,
      doc: 'a MySQL query without a result after this fails (503 naming MySQL); also bounds the wait for a pooled connection',
    }),
    mysqlConnectMs: int({ env: 'MYSQL_CONNECT_TIMEOUT_MS', ...dependencyBound, doc: 'connecting to MySQL (TCP and handshake) fails after this' }),
  },
  idBlockSize: int({
    env: 'ID_BLOCK_SIZE',
    default: 100,
    min: 1,
    max: 1_000_000,
    doc: 'order-id sequence numbers an instance reserves per Redis round trip (1 = one round trip per id; see src/lib/id)',
  }),
  seckill: {
    strategy: oneOf({
      env: 'SECKILL_STRATEGY',
      values: ['async', 'sync'],
      default: 'async',
      doc: '`async` (Lua + Redis Stream + worker) or `sync` (the same Lua decision, then lock + MySQL transaction before the answer); may differ between instances',
    }),
    /**
     * A voucher's keys and its stream share the hash tag `{seckill:N}` with N = voucherId mod
     * shards, so one Lua script touches one Redis Cluster slot while vouchers still spread over
     * the cluster. Changing it while orders are queued strands them.
     */
    streamShards: int({
      env: 'SECKILL_STREAM_SHARDS',
      default: 4,
      min: 1,
      max: 1024,
      doc: 'order streams (`{seckill:N}` hash tags); fixed for a deployment',
    }),
    /**
     * Most buckets an administrator may sell one voucher from (docs/flows/seckill-buckets.md). Above 1,
     * the deployment has 8 bucket lanes (8 more order streams); 1 turns buckets off and adds none.
     */
    maxBuckets: int({
      env: 'SECKILL_MAX_BUCKETS',
      default: 1,
      min: 1,
      max: 8,
      doc: "most buckets one voucher's stock may be split over (`buckets` of a seckill voucher, [buckets](docs/flows/seckill-buckets.md)); `1` (the default) keeps today's layout and streams; above 1 adds 8 bucket-lane order streams, which every worker reads",
    }),
    workerEnabled: bool({ env: 'SECKILL_WORKER', default: true, doc: 'run the order worker and canceller inside the app instance' }),
    consumer: str({ env: 'SECKILL_CONSUMER', default: '', shown: '`{hostname}:{port}`', doc: 'consumer name; keep stable across restarts' }),
    workerBatchSize: int({ env: 'SECKILL_WORKER_BATCH', default: 100, min: 1, max: 10_000, doc: 'entries per XREADGROUP' }),
    maxDeliveries: int({
      env: 'SECKILL_MAX_DELIVERIES',
      default: 5,
      min: 1,
      max: 1000,
      doc: 'deliveries before an entry is dead-lettered (with `SECKILL_QUEUE=rabbitmq`, of a message before the order queue dead-letters it: `x-delivery-limit` = this − 1)',
    }),
    claimIdleMs: int({ env: 'SECKILL_CLAIM_IDLE_MS', default: 30_000, min: 100, doc: "idle time after which another consumer's entry is claimed" }),
    paymentWindowSeconds: int({ env: 'SECKILL_PAYMENT_WINDOW_SECONDS', default: 15 * 60, min: 1, doc: 'unpaid orders are cancelled after this' }),
    releasePollMs: int({
      env: 'SECKILL_RELEASE_POLL_MS',
      default: 150,
      min: 10,
      max: 60_000,
      doc: 'how often each worker claims the unpaid orders now due (`{seckill:N}:unpaid-due`); an order is cancelled within about this of its due time',
    }),
    transferSweepAfterMs: int({
      env: 'SECKILL_TRANSFER_SWEEP_AFTER_MS',
      default: 10_000,
      min: 1_000,
      max: 3_600_000,
      doc: "a bucket refill's transfer still recorded this long after its take is the sweep's (its refill died between steps): keep it well above `REQUEST_DEADLINE_MS`, the longest a refill lives. See [buckets](docs/flows/seckill-buckets.md)",
    }),
    transferSweepEveryMs: int({
      env: 'SECKILL_TRANSFER_SWEEP_EVERY_MS',
      default: 5_000,
      min: 100,
      max: 600_000,
      doc: 'how often the processes running the sale jobs sweep the bucket refills left pending; units a dead refill took come back within about the age above plus this',
    }),
    reserveBatchMax: int({
      env: 'SECKILL_RESERVE_BATCH_MAX',
      default: 64,
      min: 1,
      max: 1024,
      doc: 'most orders one `reserve.lua` call decides: per instance and shard one call is out at a time, and the orders that arrive meanwhile go together in the next (no timer: at low load an order waits for nothing); `1` = each order alone and at once (with `SECKILL_REPLICA_ACKS`, a `WAIT` each). See [batching](docs/flows/seckill-batches.md#batching-the-decisions)',
    }),
    replicaAcks: int({
      env: 'SECKILL_REPLICA_ACKS',
      default: 0,
      min: 0,
      max: 16,
      doc: "replicas of the voucher's Redis master that must confirm an accepted order (`WAIT`) before it is answered; `0` = answer at once (asynchronous replication). See [replica acknowledgement](docs/flows/scale-out.md#replica-acknowledgement)",
    }),
    replicaTimeoutMs: int({
      env: 'SECKILL_REPLICA_TIMEOUT_MS',
      default: 100,
      min: 1,
      max: 10_000,
      doc: 'longest `WAIT`; on timeout the order is still answered as accepted and counted in `seckill_replica_ack_timeouts_total`',
    }),
    queue: oneOf({
      env: 'SECKILL_QUEUE',
      values: ['stream', 'rabbitmq'],
      default: 'stream',
      doc: 'what carries accepted orders to the MySQL writers: `stream` (the worker reads the Redis Streams) or `rabbitmq` (the streams are an outbox: a relay moves them to a RabbitMQ quorum queue, writers consume it; [seckill-rabbitmq.md](docs/flows/seckill-rabbitmq.md)). Decided per worker process; the decision in Redis is the same',
    }),
    /** The RabbitMQ path (SECKILL_QUEUE=rabbitmq): src/modules/seckill/broker/. */
    rabbitmq: {
      urls: custom<string[]>({
        env: 'RABBITMQ_URL',
        default: ['amqp://guest:guest@127.0.0.1:5672/'],
        secret: true,
        parse: parseRabbitmqUrls,
        doc: 'RabbitMQ for `SECKILL_QUEUE=rabbitmq`: an `amqp://` URL, or the nodes of one cluster comma-separated (same user, password and vhost); the password is never logged',
      }),
      connectTimeoutMs: int({
        env: 'RABBITMQ_CONNECT_TIMEOUT_MS',
        default: 5_000,
        min: 100,
        max: 120_000,
        doc: 'connecting to RabbitMQ (TCP and handshake) fails after this; the client then retries by itself, waiting up to 5 s between attempts',
      }),
      publishTimeoutMs: int({
        env: 'SECKILL_RABBITMQ_PUBLISH_TIMEOUT_MS',
        default: 5_000,
        min: 100,
        max: 120_000,
        doc: "longest wait for the broker's confirm of a relayed order; unconfirmed orders stay in the stream and are published again (the writer drops the duplicate)",
      }),
      publishWindow: int({
        env: 'SECKILL_RABBITMQ_PUBLISH_WINDOW',
        default: 100,
        min: 1,
        max: 10_000,
        doc: 'publishes in flight per shard: the relay reads up to this many stream entries, publishes them together and acknowledges each in the stream once the broker confirmed it',
      }),
      prefetch: int({
        env: 'SECKILL_RABBITMQ_PREFETCH',
        default: 200,
        min: 1,
        max: 10_000,
        doc: 'unacknowledged orders a writer holds (`basic.qos`): what it takes at once is what it writes in one transaction; a slower writer takes less',
      }),
      releasePrefetch: int({
        env: 'SECKILL_RABBITMQ_RELEASE_PREFETCH',
        default: 100,
        min: 1,
        max: 10_000,
        doc: 'unpaid orders a canceller holds from the release queue `seckill.unpaid.release` (`basic.qos`): those due together are cancelled in one MySQL transaction',
      }),
      maxLength: int({
        env: 'SECKILL_RABBITMQ_MAX_LENGTH',
        default: 200_000,
        min: 1,
        max: 100_000_000,
        doc: 'most orders the queue holds (`x-max-length`, `x-overflow: reject-publish`): when it is full the broker refuses publishes, the relay slows down and orders wait in the stream. Fixed when the queue is first declared',
      }),
    },
    listCacheTtlSeconds: int({
      env: 'VOUCHER_LIST_CACHE_TTL_SECONDS',
      default: 600,
      min: 1,
      max: 86_400,
      doc: "`cache:voucher-list:{shopId}` TTL (a shop's vouchers without their live stock): every voucher creation and sale control invalidates it; the TTL bounds only what none reaches (rows written to MySQL outside the app while no change follower runs, docs/flows/cdc.md; the MySQL stock shown while Redis lacks a sale)",
    }),
  },
  /** The purchase gate of gated sales (src/modules/seckill/gate/purchase-gate.ts). */
  purchaseGate: {
    tokenKeys: custom<SigningKey[]>({
      env: 'PURCHASE_TOKEN_KEYS',
      default: [],
      shown: '(empty: a fixed development key; refused in production)',
      secret: true,
      parse: parseSigningKeys,
      doc: 'HMAC keys of the purchase tokens of gated sales, `kid:secret,...` (secrets of 32+ characters): the first signs, all verify (rotation: prepend the new key, drop the old one a token lifetime later). Production refuses to start without it ([purchase gate](docs/flows/purchase-gate.md))',
    }),
    tokenTtlSeconds: int({ env: 'PURCHASE_TOKEN_TTL_SECONDS', default: 60, min: 1, max: 3600, doc: 'lifetime of a purchase token' }),
    requestsPerMinute: int({
      env: 'PURCHASE_GATE_REQUESTS_PER_MINUTE',
      default: 20,
      min: 0,
      doc: 'purchase token and captcha requests per user per minute; more → 429 (`0`: off)',
    }),
    captchaIterations: int({
      env: 'PURCHASE_CAPTCHA_ITERATIONS',
      default: 5_000,
      min: 1,
      max: 1_000_000,
      doc: 'the cost of one attempt at a captcha (an ALTCHA proof of work): PBKDF2-SHA256 iterations, for every sale; each captcha sale sets how many attempts (`captchaMaxNumber`: a solver makes half of it on average), [purchase gate](docs/flows/purchase-gate.md) gives the measured cost',
    }),
  },
  /** Order state streams (GET /voucher-order/{id}/events). */
  orderEvents: {
    streamsPerUser: int({
      env: 'ORDER_EVENTS_STREAMS_PER_USER',
      default: 4,
      min: 1,
      max: 100,
      doc: 'open order state streams (`GET /api/voucher-order/{id}/events`) per user over all instances; one more → 429',
    }),
    heartbeatMs: int({
      env: 'ORDER_EVENTS_HEARTBEAT_MS',
      default: 15_000,
      min: 100,
      max: 120_000,
      doc: 'a comment line is sent on each order state stream this often (proxies and clients see it alive)',
    }),
  },
  /** In-process near cache in front of Redis, kept coherent by Redis client-side caching (src/lib/near-cache). */
  nearCache: {
    enabled: bool({
      env: 'NEAR_CACHE_ENABLED',
      default: true,
      doc: 'keep shops, shop types, voucher lists (and their live stock) and sessions in process memory too, dropped when Redis says the key changed (client tracking; [docs/flows/near-cache.md](docs/flows/near-cache.md))',
    }),
    maxEntries: int({
      env: 'NEAR_CACHE_MAX_ENTRIES',
      default: 10_000,
      min: 1,
      max: 10_000_000,
      doc: 'near cache entries per instance (least recently used dropped first)',
    }),
    ttlMs: int({
      env: 'NEAR_CACHE_TTL_MS',
      default: 300_000,
      min: 0,
      max: 86_400_000,
      doc: 'longest life of a near cache entry besides invalidation (`0`: none)',
    }),
  },
  cache: {
    ttlJitterPercent: int({
      env: 'CACHE_TTL_JITTER_PERCENT',
      default: 10,
      min: 0,
      max: 100,
      doc: 'random 0..N % added to every cache TTL / logical expiry (avalanche)',
    }),
    nullTtlSeconds: int({
      env: 'CACHE_NULL_TTL_SECONDS',
      default: 60,
      min: 0,
      max: 86_400,
      doc: 'TTL of the null marker of a missing id (penetration; hmdp uses 120); `0` disables it',
    }),
    rebuildWaitMs: int({
      env: 'CACHE_REBUILD_WAIT_MS',
      default: 2_000,
      min: 0,
      max: 60_000,
      doc: "longest wait for another instance's rebuild of a key before loading it anyway",
    }),
  },
  shop: {
    cacheStrategy: oneOf({
      env: 'SHOP_CACHE_STRATEGY',
      values: ['mutex', 'logical'],
      default: 'mutex',
      doc: 'breakdown protection of `GET /shop/{id}`: `mutex` (TTL; one rebuild under a lock, others wait) or `logical` (no TTL; stale value served while one instance rebuilds)',
    }),
    cacheTtlSeconds: int({
      env: 'SHOP_CACHE_TTL_SECONDS',
      default: 30 * 60,
      min: 1,
      max: 30 * 86_400,
      doc: '`cache:shop:{id}` TTL (`mutex`) or logical expiry (`logical`)',
    }),
    typeCacheTtlSeconds: int({ env: 'SHOP_TYPE_CACHE_TTL_SECONDS', default: 3600, min: 1, max: 30 * 86_400, doc: '`cache:type` TTL' }),
    bloom: bool({
      env: 'SHOP_BLOOM',
      default: true,
      doc: 'check the shop id Bloom filter before loading a shop Redis lacks, so that unknown ids (cache penetration) reach neither MySQL nor the cache (built at start if missing; shops written to MySQL outside the app need `npm run bloom:rebuild`); `false` leaves only the null markers of `CACHE_NULL_TTL_SECONDS`',
    }),
    bloomExpectedItems: int({
      env: 'SHOP_BLOOM_EXPECTED_ITEMS',
      default: 1_000_000,
      min: 1,
      max: 100_000_000,
      doc: 'shops the Bloom filter is sized for (n)',
    }),
    bloomFalsePositiveRate: decimal({
      env: 'SHOP_BLOOM_FALSE_POSITIVE_RATE',
      default: 0.01,
      above: 0,
      below: 1,
      doc: 'Bloom filter false-positive rate at n (p); changing n or p needs a rebuild (done at start)',
    }),
  },
  social: {
    feedMaxLength: int({
      env: 'FEED_MAX_LENGTH',
      default: 1000,
      min: 1,
      max: 1_000_000,
      doc: 'longest follower inbox `feed:{userId}`; older entries are trimmed when a blog is pushed',
    }),
    uvTracking: bool({
      env: 'UV_TRACKING',
      default: true,
      doc: 'record unique visitors per day: every successful `GET /api/**` for the site, `GET /api/shop/{id}` also for the shop (`false`: no Redis write per request)',
    }),
    uvFlushMs: int({
      env: 'UV_FLUSH_MS',
      default: 1000,
      min: 0,
      max: 60_000,
      doc: 'visits are buffered in each instance and written every this many ms, one `PFADD` per key (`0`: one write per visit)',
    }),
  },
  upload: {
    dir: str({ env: 'UPLOAD_DIR', default: './data/uploads', doc: 'folder of uploaded blog images (gitignored), served at `/imgs/`' }),
    maxBytes: int({
      env: 'UPLOAD_MAX_BYTES',
      default: 5 * 1024 * 1024,
      min: 1,
      max: 100 * 1024 * 1024,
      doc: 'largest image accepted by `POST /api/upload/blog` (larger → 413)',
    }),
    filesPerHour: int({ env: 'UPLOAD_FILES_PER_HOUR', default: 30, min: 0, doc: 'images one user may upload per hour; more → 429 (`0`: no cap)' }),
    bytesPerDay: int({
      env: 'UPLOAD_BYTES_PER_DAY',
      default: 50 * 1024 * 1024,
      min: 0,
      doc: 'bytes one user may upload per 24 h (50 MiB); an image that does not fit → 429 (`0`: no cap)',
    }),
    unattachedTtlSeconds: int({
      env: 'UPLOAD_UNATTACHED_TTL_SECONDS',
      default: 86_400,
      min: 1,
      doc: 'images not used by a blog this long after their upload are deleted by the sweeper',
    }),
    sweepIntervalSeconds: int({
      env: 'UPLOAD_SWEEP_INTERVAL_SECONDS',
      default: 600,
      min: 0,
      max: 86_400,
      doc: 'how often the upload sweeper runs, one instance per run (`0`: never)',
    }),
  },
  /** Per-user limits on social writes (429 + Retry-After); every one is off at 0. */
  writeLimit: {
    blogsPerHour: int({
      env: 'WRITE_LIMIT_BLOGS_PER_HOUR',
      default: 10,
      min: 0,
      doc: 'blogs one user may publish per hour; more → 429 + `Retry-After` (`0`: off)',
    }),
    likesPerMinute: int({ env: 'WRITE_LIMIT_LIKES_PER_MINUTE', default: 60, min: 0, doc: 'like/unlike toggles per user per minute (`0`: off)' }),
    followsPerMinute: int({ env: 'WRITE_LIMIT_FOLLOWS_PER_MINUTE', default: 30, min: 0, doc: 'follow/unfollow requests per user per minute (`0`: off)' }),
  },
} satisfies SettingsTree;
