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
   * false (direct clients), true (any proxy) or a comma-separated list of proxy addresses/CIDRs.
   */
  trustProxy: boolean | string;
  redisUrl: string;
  /** Comma-separated host:port list; when set, the app talks to a Redis Cluster instead. */
  redisClusterNodes: string[];
  /** Prepended to every Redis key this process writes; lets several apps or test runs share one Redis. */
  redisKeyPrefix: string;
  mysqlUrl: string;
  mysqlPoolSize: number;
  /** Users allowed to create vouchers (hmdp has no roles; ids listed in ADMIN_USER_IDS). */
  adminUserIds: string[];
  /** Order-id sequence numbers each instance reserves per Redis round trip (src/lib/id `blockSize`). */
  idBlockSize: number;
  seckill: {
    /** `async`: Lua + Redis Stream + worker (default). `sync`: lock + MySQL transaction, for comparison. */
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
    /** Replicas that must confirm an accepted order (WAIT) before it is answered; 0 = off. */
    replicaAcks: number;
    /** Longest WAIT for them; on timeout the order is answered anyway and counted (seckill_replica_ack_timeouts_total). */
    replicaTimeoutMs: number;
  };
  cache: {
    /** Each cached value's TTL (or logical expiry) gets a random 0..N % on top (avalanche). */
    ttlJitterPercent: number;
    /** TTL of the null marker cached for an id that does not exist (penetration). */
    nullTtlSeconds: number;
    /** Longest wait of a request for another instance's rebuild of the same key before it loads itself. */
    rebuildWaitMs: number;
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
  };
  auth: {
    /** Session (login:token:*) time to live, renewed by every authenticated request. */
    sessionTtlSeconds: number;
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
}

type Env = Record<string, string | undefined>;

export function loadConfig(env: Env = process.env): Config {
  const read = new EnvReader(env);
  const nodeEnv = read.oneOf('NODE_ENV', ['development', 'production', 'test'] as const, 'development');
  return {
    nodeEnv,
    host: read.string('HOST', '0.0.0.0'),
    port: read.int('PORT', 8081, { min: 0, max: 65535 }),
    logLevel: read.oneOf(
      'LOG_LEVEL',
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const,
      nodeEnv === 'test' ? 'silent' : 'info',
    ),
    trustProxy: read.trustProxy('TRUST_PROXY', false),
    redisUrl: read.url('REDIS_URL', 'redis://127.0.0.1:6379/0', ['redis:', 'rediss:']),
    redisClusterNodes: read.hostPortList('REDIS_CLUSTER_NODES', []),
    redisKeyPrefix: read.string('REDIS_KEY_PREFIX', ''),
    mysqlUrl: read.url('MYSQL_URL', 'mysql://root@127.0.0.1:3306/hmdp', ['mysql:']),
    mysqlPoolSize: read.int('MYSQL_POOL_SIZE', 10, { min: 1, max: 1000 }),
    adminUserIds: read.idList('ADMIN_USER_IDS', []),
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
      replicaAcks: read.int('SECKILL_REPLICA_ACKS', 0, { min: 0, max: 16 }),
      replicaTimeoutMs: read.int('SECKILL_REPLICA_TIMEOUT_MS', 100, { min: 1, max: 10_000 }),
    },
    cache: {
      ttlJitterPercent: read.int('CACHE_TTL_JITTER_PERCENT', 10, { min: 0, max: 100 }),
      nullTtlSeconds: read.int('CACHE_NULL_TTL_SECONDS', 60, { min: 0, max: 86_400 }),
      rebuildWaitMs: read.int('CACHE_REBUILD_WAIT_MS', 2_000, { min: 0, max: 60_000 }),
    },
    shop: {
      cacheStrategy: read.oneOf('SHOP_CACHE_STRATEGY', ['mutex', 'logical'] as const, 'mutex'),
      cacheTtlSeconds: read.int('SHOP_CACHE_TTL_SECONDS', 30 * 60, { min: 1, max: 30 * 86_400 }),
      typeCacheTtlSeconds: read.int('SHOP_TYPE_CACHE_TTL_SECONDS', 3600, { min: 1, max: 30 * 86_400 }),
      bloom: read.bool('SHOP_BLOOM', false),
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
    },
    auth: {
      sessionTtlSeconds: read.int('SESSION_TTL_SECONDS', 30 * 60, { min: 1 }),
      loginCodeTtlSeconds: read.int('LOGIN_CODE_TTL_SECONDS', 2 * 60, { min: 1 }),
      loginCodeMaxAttempts: read.int('LOGIN_CODE_MAX_ATTEMPTS', 5, { min: 1, max: 100 }),
      smsDailyLimitPerPhone: read.int('SMS_DAILY_LIMIT_PER_PHONE', 10, { min: 1 }),
      smsIntervalSeconds: read.int('SMS_INTERVAL_SECONDS', 60, { min: 1 }),
      smsHourlyLimitPerIp: read.int('SMS_HOURLY_LIMIT_PER_IP', 30, { min: 1 }),
    },
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

  idList(name: string, fallback: string[]): string[] {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    const ids = value.split(',').map((item) => item.trim());
    if (!ids.every((id) => /^[1-9]\d{0,18}$/.test(id))) this.fail(name, value, 'a comma-separated list of user ids');
    return ids;
  }

  trustProxy(name: string, fallback: boolean): boolean | string {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    if (value === 'true') return true;
    if (value === 'false') return false;
    if (/^[\d.:a-fA-F/]+(,[\d.:a-fA-F/]+)*$/.test(value.replace(/\s/g, ''))) return value.replace(/\s/g, '');
    return this.fail(name, value, 'true, false or a comma-separated list of proxy addresses/CIDRs');
  }
}
