/**
 * Configuration from environment variables, validated once at start.
 *
 * Every variable has a default that works on a developer machine (services on loopback),
 * so `npm start` needs no .env file. A bad value stops the process with a message that
 * names the variable, what it got and what it expects.
 */

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export interface Config {
  nodeEnv: 'development' | 'production' | 'test';
  host: string;
  port: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /**
   * Whose X-Forwarded-For to believe when finding the client IP (rate limits are per IP):
   * false (direct clients), a number of proxy hops in front of the app, or a comma-separated list
   * of proxy addresses/CIDRs. Never `true`: that believes the left-most address, which the client writes.
   */
  trustProxy: boolean | number | string;
  redisUrl: string;
  /** Comma-separated host:port list; when set, the app talks to a Redis Cluster instead. */
  redisClusterNodes: string[];
  /** Prepended to every Redis key this process writes; lets several apps or test runs share one Redis. */
  redisKeyPrefix: string;
  mysqlUrl: string;
  mysqlPoolSize: number;
  /** How long anything may wait (docs/operations.md "Deadlines"): a stalled dependency costs a fast 503, never a hung request. */
  deadlines: {
    /** A request still unanswered after this gets 503 + Retry-After. */
    requestMs: number;
    /** A Redis command without a reply after this fails ("Command timed out"); also the TCP connect bound. */
    redisCommandMs: number;
    /** A MySQL query without a result after this fails (its connection is dropped); also bounds waiting for a pooled connection. */
    mysqlQueryMs: number;
    /** Connecting to MySQL (TCP + handshake) fails after this. */
    mysqlConnectMs: number;
  };
  /** Order-id sequence numbers each instance reserves per Redis round trip (src/lib/id `blockSize`). */
  idBlockSize: number;
  seckill: {
    /** `async`: Lua + Redis Stream + worker (default). `sync`: the same Lua decision, then lock + MySQL transaction before the answer. */
    strategy: 'async' | 'sync';
    /**
     * Order streams. A voucher's keys and its stream share the hash tag `{seckill:N}` with
     * N = voucherId mod shards, so one Lua script touches one Redis Cluster slot while vouchers
     * still spread over the cluster. Changing it while orders are queued strands them.
     */
    streamShards: number;
    /** Name in the consumer group; empty = `{hostname}:{port}`. Keep it stable across restarts. */
    consumer: string;
    /** Run the order worker inside this app instance. */
    workerEnabled: boolean;
    /** Entries read per XREADGROUP. */
    workerBatchSize: number;
    /** Deliveries after which an entry goes to the dead-letter stream. */
    maxDeliveries: number;
    /** Pending entries idle this long on any consumer are claimed (XAUTOCLAIM) and retried. */
    claimIdleMs: number;
    /** Unpaid orders are cancelled after this many seconds. */
    paymentWindowSeconds: number;
    /** How often each instance claims the unpaid orders now due from the release queue. */
    releasePollMs: number;
    /** Replicas that must confirm an accepted order (WAIT) before it is answered; 0 = off. */
    replicaAcks: number;
    /** Longest WAIT for them; on timeout the order is answered anyway and counted (seckill_replica_ack_timeouts_total). */
    replicaTimeoutMs: number;
    /** cache:voucher-list:{shopId} TTL: bounds what no invalidation reaches (rows written outside the app, the MySQL stock fallback). */
    listCacheTtlSeconds: number;
  };
  /** The purchase gate of gated sales (src/modules/seckill/gate/purchase-gate.ts). */
  purchaseGate: {
    /** HMAC keys of purchase tokens, the signing one first; empty: a fixed development key (refused in production). */
    tokenKeys: Array<{ kid: string; secret: string }>;
    /** Lifetime of a purchase token. */
    tokenTtlSeconds: number;
    /** Token and captcha requests per user per minute (0: off). */
    requestsPerMinute: number;
    /** Wrong captcha answers before the challenge is dropped (a new one must be fetched). */
    captchaTries: number;
  };
  /** Order state streams (GET /voucher-order/{id}/events). */
  orderEvents: {
    /** Open streams per user across all instances; one more → 429. */
    streamsPerUser: number;
    /** A comment line is sent this often so proxies and clients see the stream alive. */
    heartbeatMs: number;
  };
  cache: {
    /** Each cached value's TTL (or logical expiry) gets a random 0..N % on top (avalanche). */
    ttlJitterPercent: number;
    /** TTL of the null marker cached for an id that does not exist (penetration). */
    nullTtlSeconds: number;
    /** Longest wait of a request for another instance's rebuild of the same key before it loads itself. */
    rebuildWaitMs: number;
  };
  /** In-process near cache in front of Redis, kept coherent by Redis client-side caching (src/lib/near-cache). */
  nearCache: {
    enabled: boolean;
    /** Entries kept per instance (LRU). */
    maxEntries: number;
    /** Longest life of an entry besides invalidation; 0: none. */
    ttlMs: number;
  };
  shop: {
    /** Breakdown protection of `GET /shop/{id}`: `mutex` (TTL + rebuild lock) or `logical` (no TTL, stale served while one instance rebuilds). */
    cacheStrategy: 'mutex' | 'logical';
    /** cache:shop:{id} TTL (mutex) or logical expiry (logical). */
    cacheTtlSeconds: number;
    /** cache:type TTL. */
    typeCacheTtlSeconds: number;
    /** Check the shop id Bloom filter before loading a missing shop; built at start if missing. */
    bloom: boolean;
    /** Shops the Bloom filter is sized for. */
    bloomExpectedItems: number;
    /** Bloom filter false-positive rate at bloomExpectedItems. */
    bloomFalsePositiveRate: number;
  };
  social: {
    /** Longest inbox (`feed:{userId}`): older entries are trimmed when a blog is pushed. */
    feedMaxLength: number;
    /** Record unique visitors (HyperLogLog per day) of the site (GET /api/**) and of shop pages. */
    uvTracking: boolean;
    /** Visits are buffered and written every this many ms (one PFADD per key); 0 writes each visit at once. */
    uvFlushMs: number;
  };
  upload: {
    /** Folder of uploaded images, served under /imgs/ (hmdp's nginx path). */
    dir: string;
    /** Largest accepted image in bytes; larger → 413. */
    maxBytes: number;
    /** Images one user may upload per hour (0: no cap); more → 429. */
    filesPerHour: number;
    /** Bytes one user may upload per 24 h (0: no cap); more → 429. */
    bytesPerDay: number;
    /** Images not attached to a blog this long after their upload are deleted by the sweeper. */
    unattachedTtlSeconds: number;
    /** How often the sweeper runs (one instance per run); 0: never. */
    sweepIntervalSeconds: number;
  };
  /** Per-user limits on social writes (429 + Retry-After); every one is off at 0. */
  writeLimit: {
    blogsPerHour: number;
    likesPerMinute: number;
    followsPerMinute: number;
  };
  sms: {
    /**
     * How login codes are delivered: `http` (an SMS gateway), `log` (the code is logged in
     * development only), or undefined when SMS_SENDER is unset: `log` outside production, and a
     * refusal to start in production (src/modules/users/sms-sender.ts).
     */
    sender: 'log' | 'http' | undefined;
    http: {
      /** The gateway's endpoint (POST, JSON body). */
      url: string;
      /** Header carrying the credential (empty: none). */
      authHeader: string;
      authToken: string;
      /** JSON body with {{phone}}, {{code}} and {{minutes}} placeholders. */
      bodyTemplate: string;
      timeoutMs: number;
    };
  };
  auth: {
    /** Session (login:token:*) time to live, renewed by every authenticated request. */
    sessionTtlSeconds: number;
    /** Absolute session lifetime from the login, however active the session. */
    sessionMaxAgeSeconds: number;
    /** Login code (login:code:*) time to live. */
    loginCodeTtlSeconds: number;
    /** Wrong codes tolerated before the code is burnt and a new one must be requested. */
    loginCodeMaxAttempts: number;
    /** Codes per phone per day. */
    smsDailyLimitPerPhone: number;
    /** Minimum seconds between two codes for one phone. */
    smsIntervalSeconds: number;
    /** Codes per client IP per hour. */
    smsHourlyLimitPerIp: number;
  };
  /** Rate limits on Redis, shared by all instances; every one is off at 0. */
  rateLimit: {
    /** Order requests (POST /voucher-order/seckill/{id}) per user per second. */
    orderPerUser: number;
    /** Order requests per client IP per second. */
    orderPerIp: number;
    /** Order requests admitted per sale (voucher) per second across all instances; beyond: 429 without touching the sale. */
    saleAdmissionPerSecond: number;
    /** Requests to /api per client IP per `apiWindowSeconds` (@fastify/rate-limit); the order route has its own. */
    apiPerIp: number;
    apiWindowSeconds: number;
  };
  /** Bearer token of `GET /metrics`; empty: no /metrics route at all. */
  metricsToken: string;
  /** Port of the standalone order worker's `GET /metrics` (src/cli/order-worker.ts); 0: none. */
  workerMetricsPort: number;
  /** HMDP_COMPAT: the API also without /api, refusals there as 200 + success:false (src/http/hmdp-compat.ts). */
  hmdpCompat: boolean;
  /** Language of messages for a request whose Accept-Language names neither Chinese nor English (src/http/language.ts). */
  defaultLanguage: 'zh' | 'en';
  http: {
    /** Origins allowed to call the API from a browser (CORS); empty: same origin only. */
    corsOrigins: string[];
    /** Largest request body (JSON) in bytes; larger → 413. Uploads have UPLOAD_MAX_BYTES. */
    bodyLimitBytes: number;
    /** Longest time to receive a whole request (0: none); slow clients get 408. */
    requestTimeoutMs: number;
    /** Socket inactivity after which a connection is closed (0: none). */
    connectionTimeoutMs: number;
    /** Idle keep-alive connections are closed after this; behind a proxy it must exceed the proxy's idle timeout. */
    keepAliveTimeoutMs: number;
  };
}

type Env = Record<string, string | undefined>;

const DEFAULT_SMS_BODY = '{"phone":"{{phone}}","message":"Your hmdp login code is {{code}}. It expires in {{minutes}} minutes."}';

/**
 * One environment variable as the README's configuration table shows it. `ENV_VARS` is the source
 * of that table (`npm run docs:config` writes it); test/unit/config-docs.test.ts fails when the
 * list, the table and `loadConfig` disagree: a variable read but not listed or listed but not
 * read, a `default` that does not behave like leaving the variable unset, or a stale table.
 */
export interface EnvVar {
  name: string;
  /** A value that behaves exactly like leaving the variable unset ('' for "empty"). */
  default: string;
  /** The default as the table shows it (Markdown), when the plain value says too little. */
  shown?: string;
  /** What it does, one table cell of Markdown. */
  meaning: string;
}

/** Every variable `loadConfig` reads, in the order of the README's table. */
export const ENV_VARS: readonly EnvVar[] = [
  { name: 'NODE_ENV', default: 'development', meaning: '`development`, `production` or `test` (`test`: `LOG_LEVEL` defaults to `silent`)' },
  { name: 'HOST', default: '0.0.0.0', meaning: 'address the HTTP server listens on' },
  { name: 'PORT', default: '8081', meaning: 'port the HTTP server listens on' },
  { name: 'REDIS_URL', default: 'redis://127.0.0.1:6379/0', meaning: 'standalone Redis' },
  { name: 'REDIS_CLUSTER_NODES', default: '', meaning: '`host:port,...` of a Redis Cluster; replaces `REDIS_URL`' },
  { name: 'REDIS_KEY_PREFIX', default: '', meaning: 'prefix for every key (several apps or test runs on one Redis)' },
  { name: 'MYSQL_URL', default: 'mysql://root@127.0.0.1:3306/hmdp', meaning: 'MySQL 8 or MariaDB 10.11' },
  { name: 'MYSQL_POOL_SIZE', default: '10', meaning: 'connections per instance' },
  { name: 'LOG_LEVEL', default: 'info', shown: '`info` (`silent` in tests)', meaning: 'pino level' },
  {
    name: 'TRUST_PROXY',
    default: 'false',
    meaning:
      'proxies whose `X-Forwarded-For` names the client: their number in front of the app (`1` behind one nginx that appends `$remote_addr`) or their addresses/CIDRs (`127.0.0.1`). `true` is refused: it believes the left-most address, which the client writes ([docs/operations.md](docs/operations.md#client-ip-behind-a-proxy))',
  },
  { name: 'SESSION_TTL_SECONDS', default: '1800', meaning: 'session lifetime after the last request' },
  {
    name: 'SESSION_MAX_AGE_SECONDS',
    default: '43200',
    meaning: 'absolute session lifetime from the login, however active (12 h: OWASP ASVS level 2); `POST /api/user/logout-all` ends every session sooner',
  },
  { name: 'LOGIN_CODE_TTL_SECONDS', default: '120', meaning: 'login code lifetime' },
  { name: 'LOGIN_CODE_MAX_ATTEMPTS', default: '5', meaning: 'wrong codes before a code is burnt' },
  { name: 'SMS_INTERVAL_SECONDS', default: '60', meaning: 'minimum gap between two codes for one phone (`0`: none)' },
  { name: 'SMS_DAILY_LIMIT_PER_PHONE', default: '10', meaning: 'codes per phone per 24 h (`0`: no cap)' },
  { name: 'SMS_HOURLY_LIMIT_PER_IP', default: '30', meaning: 'codes per client IP per hour (`0`: no cap)' },
  {
    name: 'SMS_SENDER',
    default: '',
    shown: '(empty: `log`; refused in production)',
    meaning:
      'how login codes are sent: `http` (the gateway below) or `log` (the code is logged only when `NODE_ENV=development`). Production refuses to start unless it is set, so `log` there must be chosen explicitly',
  },
  {
    name: 'SMS_HTTP_URL',
    default: '',
    meaning:
      'SMS gateway endpoint (`SMS_SENDER=http`; required then; `https://` in production unless loopback): a JSON `POST` per code; non-2xx or timeout → 503',
  },
  { name: 'SMS_HTTP_AUTH_HEADER', default: 'authorization', meaning: 'request header carrying `SMS_HTTP_AUTH_TOKEN`' },
  { name: 'SMS_HTTP_AUTH_TOKEN', default: '', meaning: 'credential sent in `SMS_HTTP_AUTH_HEADER` (e.g. `Bearer …`; empty: no header). Never logged' },
  {
    name: 'SMS_HTTP_BODY',
    default: DEFAULT_SMS_BODY,
    shown: '`{"phone":"{{phone}}","message":"…{{code}}…{{minutes}}…"}`',
    meaning: 'JSON body of the gateway request; `{{phone}}`, `{{code}}` and `{{minutes}}` (code lifetime) are filled in',
  },
  { name: 'SMS_HTTP_TIMEOUT_MS', default: '5000', meaning: 'longest wait for the gateway; then the code is withdrawn and the client gets 503' },
  {
    name: 'ORDER_RATE_LIMIT_PER_USER',
    default: '5',
    meaning:
      "seckill order requests per user per second, all instances together; more → 429 (`0`: off). A buyer's first request of a second is let through by the instance without a Redis command, so with N instances up to 5 + N pass",
  },
  {
    name: 'ORDER_RATE_LIMIT_PER_IP',
    default: '200',
    meaning: 'seckill order requests per client IP per second (see `TRUST_PROXY`; `0`: off); likewise up to 5 % more per instance',
  },
  {
    name: 'SECKILL_ADMISSION_RATE',
    default: '20000',
    meaning:
      'order requests admitted per sale (voucher) per second across all instances; the rest get 429 without touching the sale in Redis. Set it below what your Redis sustains for `reserve.lua` (`0`: off)',
  },
  {
    name: 'API_RATE_LIMIT_PER_IP',
    default: '0',
    shown: '`0` (off)',
    meaning:
      "requests to `/api` per client IP per window (@fastify/rate-limit on Redis; the order route has its own limits). Usually the edge proxy's job; turn it on when there is none",
  },
  { name: 'API_RATE_LIMIT_WINDOW_SECONDS', default: '60', meaning: 'window of `API_RATE_LIMIT_PER_IP`' },
  {
    name: 'CORS_ORIGINS',
    default: '',
    shown: '(empty: same origin only)',
    meaning: 'comma-separated origins (`https://shop.example.com`) whose pages may call the API from a browser',
  },
  {
    name: 'METRICS_TOKEN',
    default: '',
    shown: '(empty: no `/metrics`)',
    meaning:
      'bearer token the Prometheus scraper sends to `GET /metrics` (`authorization: Bearer <token>`, at least 16 characters); without it the route does not exist',
  },
  {
    name: 'WORKER_METRICS_PORT',
    default: '0',
    shown: '`0` (none)',
    meaning: 'port (on `HOST`) where a standalone order worker (`src/cli/order-worker.ts`) serves `GET /metrics` to a scraper holding `METRICS_TOKEN`',
  },
  {
    name: 'HMDP_COMPAT',
    default: 'false',
    meaning:
      "the course's own front end and nginx config unchanged: the API also served without `/api`, refusals there answered 200 with `success: false`, the editor's `/imgs/…` delete name accepted ([docs/http.md](docs/http.md#hmdp-compatibility-mode))",
  },
  {
    name: 'DEFAULT_LANGUAGE',
    default: 'zh',
    meaning:
      '`zh` or `en`: the language of `errorMsg` when a request has no `Accept-Language` or names neither Chinese nor English ([docs/http.md](docs/http.md#languages))',
  },
  { name: 'BODY_LIMIT_BYTES', default: '65536', meaning: 'largest JSON request body (larger → 413); image uploads are bounded by `UPLOAD_MAX_BYTES`' },
  { name: 'HTTP_REQUEST_TIMEOUT_MS', default: '30000', meaning: 'longest time to receive a whole request (slow clients get 408; `0`: none)' },
  {
    name: 'HTTP_CONNECTION_TIMEOUT_MS',
    default: '120000',
    meaning: 'socket inactivity before the connection is closed (`0`: none; must exceed the keep-alive timeout)',
  },
  {
    name: 'HTTP_KEEP_ALIVE_TIMEOUT_MS',
    default: '72000',
    meaning:
      "idle keep-alive connections are closed after this; behind nginx or a load balancer it must exceed the proxy's idle timeout for upstream connections (nginx `keepalive_timeout`, 60 s by default), or the proxy may reuse a connection the app is closing (sporadic 502)",
  },
  {
    name: 'REQUEST_DEADLINE_MS',
    default: '2000',
    meaning: 'a request still unanswered after this gets 503 + `Retry-After` (a stalled Redis or MySQL never hangs a request; see docs/operations.md)',
  },
  {
    name: 'REDIS_COMMAND_TIMEOUT_MS',
    default: '',
    shown: 'half of `REQUEST_DEADLINE_MS`',
    meaning: 'a Redis command without a reply after this fails (503 naming Redis); at most `REQUEST_DEADLINE_MS`',
  },
  {
    name: 'MYSQL_QUERY_TIMEOUT_MS',
    default: '',
    shown: 'half of `REQUEST_DEADLINE_MS`',
    meaning: 'a MySQL query without a result after this fails (503 naming MySQL); also bounds the wait for a pooled connection',
  },
  {
    name: 'MYSQL_CONNECT_TIMEOUT_MS',
    default: '',
    shown: 'half of `REQUEST_DEADLINE_MS`',
    meaning: 'connecting to MySQL (TCP and handshake) fails after this',
  },
  {
    name: 'ID_BLOCK_SIZE',
    default: '100',
    meaning: 'order-id sequence numbers an instance reserves per Redis round trip (1 = one round trip per id; see src/lib/id)',
  },
  {
    name: 'SECKILL_STRATEGY',
    default: 'async',
    meaning:
      '`async` (Lua + Redis Stream + worker) or `sync` (the same Lua decision, then lock + MySQL transaction before the answer); may differ between instances',
  },
  { name: 'SECKILL_STREAM_SHARDS', default: '4', meaning: 'order streams (`{seckill:N}` hash tags); fixed for a deployment' },
  { name: 'SECKILL_WORKER', default: 'true', meaning: 'run the order worker and canceller inside the app instance' },
  { name: 'SECKILL_CONSUMER', default: '', shown: '`{hostname}:{port}`', meaning: 'consumer name; keep stable across restarts' },
  { name: 'SECKILL_WORKER_BATCH', default: '100', meaning: 'entries per XREADGROUP' },
  { name: 'SECKILL_MAX_DELIVERIES', default: '5', meaning: 'deliveries before an entry is dead-lettered' },
  { name: 'SECKILL_CLAIM_IDLE_MS', default: '30000', meaning: "idle time after which another consumer's entry is claimed" },
  { name: 'SECKILL_PAYMENT_WINDOW_SECONDS', default: '900', meaning: 'unpaid orders are cancelled after this' },
  {
    name: 'SECKILL_RELEASE_POLL_MS',
    default: '150',
    meaning: 'how often each worker claims the unpaid orders now due (`{seckill:N}:unpaid-due`); an order is cancelled within about this of its due time',
  },
  {
    name: 'SECKILL_REPLICA_ACKS',
    default: '0',
    meaning:
      "replicas of the voucher's Redis master that must confirm an accepted order (`WAIT`) before it is answered; `0` = answer at once (asynchronous replication). See [replica acknowledgement](docs/flows/scale-out.md#replica-acknowledgement)",
  },
  {
    name: 'SECKILL_REPLICA_TIMEOUT_MS',
    default: '100',
    meaning: 'longest `WAIT`; on timeout the order is still answered as accepted and counted in `seckill_replica_ack_timeouts_total`',
  },
  {
    name: 'PURCHASE_TOKEN_KEYS',
    default: '',
    shown: '(empty: a fixed development key; refused in production)',
    meaning:
      'HMAC keys of the purchase tokens of gated sales, `kid:secret,...` (secrets of 32+ characters): the first signs, all verify (rotation: prepend the new key, drop the old one a token lifetime later). Production refuses to start without it ([purchase gate](docs/flows/purchase-gate.md))',
  },
  { name: 'PURCHASE_TOKEN_TTL_SECONDS', default: '60', meaning: 'lifetime of a purchase token' },
  { name: 'PURCHASE_GATE_REQUESTS_PER_MINUTE', default: '20', meaning: 'purchase token and captcha requests per user per minute; more → 429 (`0`: off)' },
  { name: 'PURCHASE_CAPTCHA_TRIES', default: '3', meaning: 'wrong answers to a captcha before it is dropped and a new one must be fetched' },
  {
    name: 'ORDER_EVENTS_STREAMS_PER_USER',
    default: '4',
    meaning: 'open order state streams (`GET /api/voucher-order/{id}/events`) per user over all instances; one more → 429',
  },
  {
    name: 'ORDER_EVENTS_HEARTBEAT_MS',
    default: '15000',
    meaning: 'a comment line is sent on each order state stream this often (proxies and clients see it alive)',
  },
  {
    name: 'SHOP_CACHE_STRATEGY',
    default: 'mutex',
    meaning:
      'breakdown protection of `GET /shop/{id}`: `mutex` (TTL; one rebuild under a lock, others wait) or `logical` (no TTL; stale value served while one instance rebuilds)',
  },
  {
    name: 'NEAR_CACHE_ENABLED',
    default: 'true',
    meaning:
      'keep shops, shop types, voucher lists (and their live stock) and sessions in process memory too, dropped when Redis says the key changed (client tracking; [docs/flows/near-cache.md](docs/flows/near-cache.md))',
  },
  { name: 'NEAR_CACHE_MAX_ENTRIES', default: '10000', meaning: 'near cache entries per instance (least recently used dropped first)' },
  { name: 'NEAR_CACHE_TTL_MS', default: '300000', meaning: 'longest life of a near cache entry besides invalidation (`0`: none)' },
  { name: 'SHOP_CACHE_TTL_SECONDS', default: '1800', meaning: '`cache:shop:{id}` TTL (`mutex`) or logical expiry (`logical`)' },
  { name: 'SHOP_TYPE_CACHE_TTL_SECONDS', default: '3600', meaning: '`cache:type` TTL' },
  {
    name: 'VOUCHER_LIST_CACHE_TTL_SECONDS',
    default: '600',
    meaning:
      "`cache:voucher-list:{shopId}` TTL (a shop's vouchers without their live stock): every voucher creation and sale control invalidates it; the TTL bounds only what none reaches (rows written to MySQL outside the app, the MySQL stock shown while Redis lacks a sale)",
  },
  { name: 'CACHE_TTL_JITTER_PERCENT', default: '10', meaning: 'random 0..N % added to every cache TTL / logical expiry (avalanche)' },
  { name: 'CACHE_NULL_TTL_SECONDS', default: '60', meaning: 'TTL of the null marker of a missing id (penetration; hmdp uses 120); `0` disables it' },
  { name: 'CACHE_REBUILD_WAIT_MS', default: '2000', meaning: "longest wait for another instance's rebuild of a key before loading it anyway" },
  {
    name: 'SHOP_BLOOM',
    default: 'true',
    meaning:
      'check the shop id Bloom filter before loading a shop Redis lacks, so that unknown ids (cache penetration) reach neither MySQL nor the cache (built at start if missing; shops written to MySQL outside the app need `npm run bloom:rebuild`); `false` leaves only the null markers of `CACHE_NULL_TTL_SECONDS`',
  },
  { name: 'SHOP_BLOOM_EXPECTED_ITEMS', default: '1000000', meaning: 'shops the Bloom filter is sized for (n)' },
  {
    name: 'SHOP_BLOOM_FALSE_POSITIVE_RATE',
    default: '0.01',
    meaning: 'Bloom filter false-positive rate at n (p); changing n or p needs a rebuild (done at start)',
  },
  { name: 'FEED_MAX_LENGTH', default: '1000', meaning: 'longest follower inbox `feed:{userId}`; older entries are trimmed when a blog is pushed' },
  {
    name: 'UV_TRACKING',
    default: 'true',
    meaning:
      'record unique visitors per day: every successful `GET /api/**` for the site, `GET /api/shop/{id}` also for the shop (`false`: no Redis write per request)',
  },
  {
    name: 'UV_FLUSH_MS',
    default: '1000',
    meaning: 'visits are buffered in each instance and written every this many ms, one `PFADD` per key (`0`: one write per visit)',
  },
  { name: 'UPLOAD_DIR', default: './data/uploads', meaning: 'folder of uploaded blog images (gitignored), served at `/imgs/`' },
  { name: 'UPLOAD_MAX_BYTES', default: '5242880', meaning: 'largest image accepted by `POST /api/upload/blog` (larger → 413)' },
  { name: 'UPLOAD_FILES_PER_HOUR', default: '30', meaning: 'images one user may upload per hour; more → 429 (`0`: no cap)' },
  { name: 'UPLOAD_BYTES_PER_DAY', default: '52428800', meaning: 'bytes one user may upload per 24 h (50 MiB); an image that does not fit → 429 (`0`: no cap)' },
  {
    name: 'UPLOAD_UNATTACHED_TTL_SECONDS',
    default: '86400',
    meaning: 'images not used by a blog this long after their upload are deleted by the sweeper',
  },
  { name: 'UPLOAD_SWEEP_INTERVAL_SECONDS', default: '600', meaning: 'how often the upload sweeper runs, one instance per run (`0`: never)' },
  { name: 'WRITE_LIMIT_BLOGS_PER_HOUR', default: '10', meaning: 'blogs one user may publish per hour; more → 429 + `Retry-After` (`0`: off)' },
  { name: 'WRITE_LIMIT_LIKES_PER_MINUTE', default: '60', meaning: 'like/unlike toggles per user per minute (`0`: off)' },
  { name: 'WRITE_LIMIT_FOLLOWS_PER_MINUTE', default: '30', meaning: 'follow/unfollow requests per user per minute (`0`: off)' },
];

/** Placeholders of SMS_HTTP_BODY. */
export const SMS_BODY_PLACEHOLDERS = ['phone', 'code', 'minutes'] as const;

/** Fills the SMS_HTTP_BODY template; values are JSON-escaped, so they cannot break out of their strings. */
export function renderSmsBody(template: string, values: Record<(typeof SMS_BODY_PLACEHOLDERS)[number], string>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (placeholder, name: string) =>
    name in values ? JSON.stringify(values[name as keyof typeof values]).slice(1, -1) : placeholder,
  );
}

/** Variables that no longer do anything: setting one stops the process with what to do instead. */
export const RETIRED_ENV_VARS: Readonly<Record<string, string>> = {
  ADMIN_USER_IDS: 'administrators are a role in tb_user now: npm run admin -- grant <phone>',
};

export function loadConfig(env: Env = process.env): Config {
  const read = new EnvReader(env);
  for (const [name, instead] of Object.entries(RETIRED_ENV_VARS)) read.retired(name, instead);
  const nodeEnv = read.oneOf('NODE_ENV', ['development', 'production', 'test'] as const, 'development');
  return {
    nodeEnv,
    host: read.string('HOST', '0.0.0.0'),
    port: read.int('PORT', 8081, { min: 0, max: 65535 }),
    logLevel: read.oneOf('LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, nodeEnv === 'test' ? 'silent' : 'info'),
    trustProxy: read.trustProxy('TRUST_PROXY', false),
    redisUrl: read.url('REDIS_URL', 'redis://127.0.0.1:6379/0', ['redis:', 'rediss:']),
    redisClusterNodes: read.hostPortList('REDIS_CLUSTER_NODES', []),
    redisKeyPrefix: read.string('REDIS_KEY_PREFIX', ''),
    mysqlUrl: read.url('MYSQL_URL', 'mysql://root@127.0.0.1:3306/hmdp', ['mysql:']),
    mysqlPoolSize: read.int('MYSQL_POOL_SIZE', 10, { min: 1, max: 1000 }),
    deadlines: readDeadlines(read),
    idBlockSize: read.int('ID_BLOCK_SIZE', 100, { min: 1, max: 1_000_000 }),
    seckill: {
      strategy: read.oneOf('SECKILL_STRATEGY', ['async', 'sync'] as const, 'async'),
      streamShards: read.int('SECKILL_STREAM_SHARDS', 4, { min: 1, max: 1024 }),
      consumer: read.string('SECKILL_CONSUMER', ''),
      workerEnabled: read.bool('SECKILL_WORKER', true),
      workerBatchSize: read.int('SECKILL_WORKER_BATCH', 100, { min: 1, max: 10_000 }),
      maxDeliveries: read.int('SECKILL_MAX_DELIVERIES', 5, { min: 1, max: 1000 }),
      claimIdleMs: read.int('SECKILL_CLAIM_IDLE_MS', 30_000, { min: 100 }),
      paymentWindowSeconds: read.int('SECKILL_PAYMENT_WINDOW_SECONDS', 15 * 60, { min: 1 }),
      releasePollMs: read.int('SECKILL_RELEASE_POLL_MS', 150, { min: 10, max: 60_000 }),
      replicaAcks: read.int('SECKILL_REPLICA_ACKS', 0, { min: 0, max: 16 }),
      replicaTimeoutMs: read.int('SECKILL_REPLICA_TIMEOUT_MS', 100, { min: 1, max: 10_000 }),
      listCacheTtlSeconds: read.int('VOUCHER_LIST_CACHE_TTL_SECONDS', 600, { min: 1, max: 86_400 }),
    },
    purchaseGate: {
      tokenKeys: read.signingKeys('PURCHASE_TOKEN_KEYS'),
      tokenTtlSeconds: read.int('PURCHASE_TOKEN_TTL_SECONDS', 60, { min: 1, max: 3600 }),
      requestsPerMinute: read.int('PURCHASE_GATE_REQUESTS_PER_MINUTE', 20, { min: 0 }),
      captchaTries: read.int('PURCHASE_CAPTCHA_TRIES', 3, { min: 1, max: 20 }),
    },
    orderEvents: {
      streamsPerUser: read.int('ORDER_EVENTS_STREAMS_PER_USER', 4, { min: 1, max: 100 }),
      heartbeatMs: read.int('ORDER_EVENTS_HEARTBEAT_MS', 15_000, { min: 100, max: 120_000 }),
    },
    cache: {
      ttlJitterPercent: read.int('CACHE_TTL_JITTER_PERCENT', 10, { min: 0, max: 100 }),
      nullTtlSeconds: read.int('CACHE_NULL_TTL_SECONDS', 60, { min: 0, max: 86_400 }),
      rebuildWaitMs: read.int('CACHE_REBUILD_WAIT_MS', 2_000, { min: 0, max: 60_000 }),
    },
    nearCache: {
      enabled: read.bool('NEAR_CACHE_ENABLED', true),
      maxEntries: read.int('NEAR_CACHE_MAX_ENTRIES', 10_000, { min: 1, max: 10_000_000 }),
      ttlMs: read.int('NEAR_CACHE_TTL_MS', 300_000, { min: 0, max: 86_400_000 }),
    },
    shop: {
      cacheStrategy: read.oneOf('SHOP_CACHE_STRATEGY', ['mutex', 'logical'] as const, 'mutex'),
      cacheTtlSeconds: read.int('SHOP_CACHE_TTL_SECONDS', 30 * 60, { min: 1, max: 30 * 86_400 }),
      typeCacheTtlSeconds: read.int('SHOP_TYPE_CACHE_TTL_SECONDS', 3600, { min: 1, max: 30 * 86_400 }),
      bloom: read.bool('SHOP_BLOOM', true),
      bloomExpectedItems: read.int('SHOP_BLOOM_EXPECTED_ITEMS', 1_000_000, { min: 1, max: 100_000_000 }),
      bloomFalsePositiveRate: read.number('SHOP_BLOOM_FALSE_POSITIVE_RATE', 0.01, { minExclusive: 0, maxExclusive: 1 }),
    },
    social: {
      feedMaxLength: read.int('FEED_MAX_LENGTH', 1000, { min: 1, max: 1_000_000 }),
      uvTracking: read.bool('UV_TRACKING', true),
      uvFlushMs: read.int('UV_FLUSH_MS', 1000, { min: 0, max: 60_000 }),
    },
    upload: {
      dir: read.string('UPLOAD_DIR', './data/uploads'),
      maxBytes: read.int('UPLOAD_MAX_BYTES', 5 * 1024 * 1024, { min: 1, max: 100 * 1024 * 1024 }),
      filesPerHour: read.int('UPLOAD_FILES_PER_HOUR', 30, { min: 0 }),
      bytesPerDay: read.int('UPLOAD_BYTES_PER_DAY', 50 * 1024 * 1024, { min: 0 }),
      unattachedTtlSeconds: read.int('UPLOAD_UNATTACHED_TTL_SECONDS', 86_400, { min: 1 }),
      sweepIntervalSeconds: read.int('UPLOAD_SWEEP_INTERVAL_SECONDS', 600, { min: 0, max: 86_400 }),
    },
    writeLimit: {
      blogsPerHour: read.int('WRITE_LIMIT_BLOGS_PER_HOUR', 10, { min: 0 }),
      likesPerMinute: read.int('WRITE_LIMIT_LIKES_PER_MINUTE', 60, { min: 0 }),
      followsPerMinute: read.int('WRITE_LIMIT_FOLLOWS_PER_MINUTE', 30, { min: 0 }),
    },
    sms: readSms(read),
    auth: {
      sessionTtlSeconds: read.int('SESSION_TTL_SECONDS', 30 * 60, { min: 1 }),
      sessionMaxAgeSeconds: read.int('SESSION_MAX_AGE_SECONDS', 12 * 3600, { min: 1, max: 366 * 86_400 }),
      loginCodeTtlSeconds: read.int('LOGIN_CODE_TTL_SECONDS', 2 * 60, { min: 1 }),
      loginCodeMaxAttempts: read.int('LOGIN_CODE_MAX_ATTEMPTS', 5, { min: 1, max: 100 }),
      smsDailyLimitPerPhone: read.int('SMS_DAILY_LIMIT_PER_PHONE', 10, { min: 0 }),
      smsIntervalSeconds: read.int('SMS_INTERVAL_SECONDS', 60, { min: 0 }),
      smsHourlyLimitPerIp: read.int('SMS_HOURLY_LIMIT_PER_IP', 30, { min: 0 }),
    },
    rateLimit: {
      orderPerUser: read.int('ORDER_RATE_LIMIT_PER_USER', 5, { min: 0 }),
      orderPerIp: read.int('ORDER_RATE_LIMIT_PER_IP', 200, { min: 0 }),
      saleAdmissionPerSecond: read.int('SECKILL_ADMISSION_RATE', 20_000, { min: 0 }),
      apiPerIp: read.int('API_RATE_LIMIT_PER_IP', 0, { min: 0 }),
      apiWindowSeconds: read.int('API_RATE_LIMIT_WINDOW_SECONDS', 60, { min: 1, max: 86_400 }),
    },
    metricsToken: read.secret('METRICS_TOKEN', 16),
    workerMetricsPort: read.int('WORKER_METRICS_PORT', 0, { min: 0, max: 65535 }),
    hmdpCompat: read.bool('HMDP_COMPAT', false),
    defaultLanguage: read.oneOf('DEFAULT_LANGUAGE', ['zh', 'en'] as const, 'zh'),
    http: readHttp(read),
  };
}

function readSms(read: EnvReader): Config['sms'] {
  const sender = read.optionalOneOf('SMS_SENDER', ['log', 'http'] as const);
  const http = {
    url: read.string('SMS_HTTP_URL', '').trim(),
    authHeader: read.string('SMS_HTTP_AUTH_HEADER', 'authorization').trim(),
    authToken: read.string('SMS_HTTP_AUTH_TOKEN', ''),
    bodyTemplate: read.string('SMS_HTTP_BODY', DEFAULT_SMS_BODY),
    timeoutMs: read.int('SMS_HTTP_TIMEOUT_MS', 5000, { min: 1, max: 60_000 }),
  };
  if (http.url !== '') read.url('SMS_HTTP_URL', http.url, ['http:', 'https:']);
  if (sender === 'http' && http.url === '') throw new ConfigError('SMS_SENDER=http needs SMS_HTTP_URL (the gateway endpoint)');
  if (http.authHeader !== '' && !/^[\w-]+$/.test(http.authHeader)) {
    throw new ConfigError(`Invalid environment variable SMS_HTTP_AUTH_HEADER=${JSON.stringify(http.authHeader)}: expected a header name`);
  }
  try {
    JSON.parse(renderSmsBody(http.bodyTemplate, { phone: '13800000000', code: '000000', minutes: '2' }));
  } catch {
    throw new ConfigError(
      `Invalid environment variable SMS_HTTP_BODY=${JSON.stringify(http.bodyTemplate)}: expected JSON with {{phone}}, {{code}}, {{minutes}}`,
    );
  }
  return { sender, http };
}

function readHttp(read: EnvReader): Config['http'] {
  const http = {
    corsOrigins: read.originList('CORS_ORIGINS', []),
    bodyLimitBytes: read.int('BODY_LIMIT_BYTES', 64 * 1024, { min: 1024, max: 100 * 1024 * 1024 }),
    requestTimeoutMs: read.int('HTTP_REQUEST_TIMEOUT_MS', 30_000, { min: 0, max: 3_600_000 }),
    connectionTimeoutMs: read.int('HTTP_CONNECTION_TIMEOUT_MS', 120_000, { min: 0, max: 3_600_000 }),
    keepAliveTimeoutMs: read.int('HTTP_KEEP_ALIVE_TIMEOUT_MS', 72_000, { min: 1, max: 3_600_000 }),
  };
  // An idle keep-alive socket is also an inactive one: a shorter connection timeout would cut it first.
  if (http.connectionTimeoutMs !== 0 && http.connectionTimeoutMs <= http.keepAliveTimeoutMs) {
    throw new ConfigError(
      `Invalid environment variable HTTP_CONNECTION_TIMEOUT_MS=${http.connectionTimeoutMs}: expected 0 or more than HTTP_KEEP_ALIVE_TIMEOUT_MS (${http.keepAliveTimeoutMs})`,
    );
  }
  return http;
}

function readDeadlines(read: EnvReader): Config['deadlines'] {
  const requestMs = read.int('REQUEST_DEADLINE_MS', 2_000, { min: 100, max: 600_000 });
  // Each dependency's bound is below the request's, so the handler answers (and names the
  // dependency) before the deadline's generic 503 does.
  const half = Math.floor(requestMs / 2);
  const within = { min: 10, max: requestMs };
  return {
    requestMs,
    redisCommandMs: read.int('REDIS_COMMAND_TIMEOUT_MS', half, within),
    mysqlQueryMs: read.int('MYSQL_QUERY_TIMEOUT_MS', half, within),
    mysqlConnectMs: read.int('MYSQL_CONNECT_TIMEOUT_MS', half, within),
  };
}

/** Typed readers that fail with the variable's name, the bad value and what was expected. */
class EnvReader {
  constructor(private readonly env: Env) {}

  private raw(name: string): string | undefined {
    const value = this.env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  }

  private fail(name: string, value: string, expected: string): never {
    throw new ConfigError(`Invalid environment variable ${name}=${JSON.stringify(value)}: expected ${expected}`);
  }

  string(name: string, fallback: string): string {
    return this.env[name] ?? fallback;
  }

  int(name: string, fallback: number, range: { min?: number; max?: number } = {}): number {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    const { min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER } = range;
    const parsed = Number(value);
    if (!/^-?\d+$/.test(value) || parsed < min || parsed > max) {
      this.fail(name, value, `an integer from ${min} to ${max}`);
    }
    return parsed;
  }

  /** A decimal number strictly between the bounds. */
  number(name: string, fallback: number, range: { minExclusive: number; maxExclusive: number }): number {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    const parsed = Number(value);
    if (!/^\d*\.?\d+(e-?\d+)?$/i.test(value) || !(parsed > range.minExclusive && parsed < range.maxExclusive)) {
      this.fail(name, value, `a number between ${range.minExclusive} and ${range.maxExclusive} (exclusive)`);
    }
    return parsed;
  }

  /** One of the allowed values, or undefined when unset (the caller decides what unset means). */
  optionalOneOf<T extends string>(name: string, allowed: readonly T[]): T | undefined {
    const value = this.raw(name);
    if (value === undefined) return undefined;
    if (!(allowed as readonly string[]).includes(value)) this.fail(name, value, `one of ${allowed.join(', ')}`);
    return value as T;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(value)) this.fail(name, value, `one of ${allowed.join(', ')}`);
    return value as T;
  }

  url(name: string, fallback: string, protocols: string[]): string {
    const value = this.raw(name) ?? fallback;
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      return this.fail(name, value, `a URL like ${fallback}`);
    }
    if (!protocols.includes(url.protocol)) this.fail(name, value, `a ${protocols.join(' or ')}// URL`);
    return value;
  }

  hostPortList(name: string, fallback: string[]): string[] {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    const items = value.split(',').map((item) => item.trim());
    for (const item of items) {
      if (!/^[\w.-]+:\d{1,5}$/.test(item)) this.fail(name, value, 'a comma-separated list of host:port');
    }
    return items;
  }

  bool(name: string, fallback: boolean): boolean {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    if (value === 'true' || value === '1') return true;
    if (value === 'false' || value === '0') return false;
    return this.fail(name, value, 'true or false');
  }

  /** A secret: empty (unset) or at least `minLength` characters, never echoed in the message. */
  secret(name: string, minLength: number): string {
    const value = this.raw(name);
    if (value === undefined) return '';
    if (value.length < minLength || /\s/.test(value)) {
      throw new ConfigError(`Invalid environment variable ${name}: expected at least ${minLength} characters without spaces (e.g. openssl rand -hex 32)`);
    }
    return value;
  }

  /** `kid:secret,kid:secret` (ids 1-32 of [\\w-], secrets 32+ characters without spaces or commas); never echoed. */
  signingKeys(name: string): Array<{ kid: string; secret: string }> {
    const value = this.raw(name);
    if (value === undefined) return [];
    return value.split(',').map((item) => {
      const separator = item.indexOf(':');
      const kid = item.slice(0, separator).trim();
      const secret = item.slice(separator + 1).trim();
      if (separator < 1 || !/^[\w-]{1,32}$/.test(kid) || secret.length < 32 || /\s/.test(secret)) {
        throw new ConfigError(
          `Invalid environment variable ${name}: expected kid:secret,... (key ids of letters, digits, _ or -; secrets of 32+ characters, e.g. openssl rand -hex 32)`,
        );
      }
      return { kid, secret };
    });
  }

  /** A variable that no longer does anything: stop rather than silently ignore what its setter meant. */
  retired(name: string, instead: string): void {
    if (this.raw(name) !== undefined) throw new ConfigError(`Environment variable ${name} is no longer supported: ${instead}`);
  }

  /** Comma-separated browser origins (`scheme://host[:port]`, no path). */
  originList(name: string, fallback: string[]): string[] {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    const origins = value
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item !== '');
    for (const origin of origins) {
      let parsed: URL | undefined;
      try {
        parsed = new URL(origin);
      } catch {
        parsed = undefined;
      }
      if (!parsed || !['http:', 'https:'].includes(parsed.protocol) || parsed.origin !== origin) {
        this.fail(name, value, 'a comma-separated list of origins like https://shop.example.com (scheme, host, optional port; no path)');
      }
    }
    return origins;
  }

  trustProxy(name: string, fallback: boolean): boolean | number | string {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    if (value === 'true') {
      // Any X-Forwarded-For would be believed, so its left-most address (the client's own writing)
      // would become the IP that every per-IP limit counts: one client, unlimited addresses.
      throw new ConfigError(
        `Invalid environment variable ${name}=true: it trusts an X-Forwarded-For the client writes itself. Set the number of proxies in front of the app (1 behind one nginx) or their addresses/CIDRs (e.g. 127.0.0.1,10.0.0.0/8)`,
      );
    }
    if (value === 'false') return false;
    if (/^\d{1,2}$/.test(value)) return Number(value); // hops, counted from the app's socket
    if (/^[\d.:a-fA-F/]+(,[\d.:a-fA-F/]+)*$/.test(value.replace(/\s/g, ''))) return value.replace(/\s/g, '');
    return this.fail(name, value, 'false, a number of proxy hops or a comma-separated list of proxy addresses/CIDRs');
  }
}
