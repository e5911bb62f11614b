import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/infra/config.js';

describe('loadConfig', () => {
  it('works with no variables at all (loopback defaults)', () => {
    const config = loadConfig({});
    expect(config.port).toBe(8081);
    expect(config.redisUrl).toBe('redis://127.0.0.1:6379/0');
    expect(config.mysqlUrl).toBe('mysql://root@127.0.0.1:3306/hmdp');
    expect(config.auth.sessionTtlSeconds).toBe(1800);
    expect(config.auth.loginCodeTtlSeconds).toBe(120);
  });

  it('reads overrides', () => {
    const config = loadConfig({ PORT: '9000', REDIS_CLUSTER_NODES: '127.0.0.1:7000, 127.0.0.1:7001', TRUST_PROXY: '10.0.0.0/8' });
    expect(config.port).toBe(9000);
    expect(config.redisClusterNodes).toEqual(['127.0.0.1:7000', '127.0.0.1:7001']);
    expect(config.trustProxy).toBe('10.0.0.0/8');
  });

  it('reads the cache settings (defaults and overrides)', () => {
    expect(loadConfig({}).shop).toMatchObject({ cacheStrategy: 'mutex', cacheTtlSeconds: 1800, bloom: true, bloomFalsePositiveRate: 0.01 });
    expect(loadConfig({}).cache).toEqual({ ttlJitterPercent: 10, nullTtlSeconds: 60, rebuildWaitMs: 2000 });
    const config = loadConfig({ SHOP_CACHE_STRATEGY: 'logical', SHOP_BLOOM: 'false', SHOP_BLOOM_FALSE_POSITIVE_RATE: '0.001', CACHE_NULL_TTL_SECONDS: '120' });
    expect(config.shop).toMatchObject({ cacheStrategy: 'logical', bloom: false, bloomFalsePositiveRate: 0.001 });
    expect(config.cache.nullTtlSeconds).toBe(120);
  });

  it('reads the social and upload settings (defaults and overrides)', () => {
    expect(loadConfig({}).social).toEqual({ feedMaxLength: 1000, uvTracking: true, uvFlushMs: 1000 });
    expect(loadConfig({}).upload).toEqual({
      dir: './data/uploads',
      maxBytes: 5 * 1024 * 1024,
      filesPerHour: 30,
      bytesPerDay: 50 * 1024 * 1024,
      unattachedTtlSeconds: 86_400,
      sweepIntervalSeconds: 600,
    });
    expect(loadConfig({}).writeLimit).toEqual({ blogsPerHour: 10, likesPerMinute: 60, followsPerMinute: 30 });
    const config = loadConfig({ FEED_MAX_LENGTH: '50', UV_TRACKING: 'false', UV_FLUSH_MS: '0', UPLOAD_DIR: '/srv/imgs', UPLOAD_MAX_BYTES: '1024' });
    expect(config.social).toEqual({ feedMaxLength: 50, uvTracking: false, uvFlushMs: 0 });
    expect(config.upload).toMatchObject({ dir: '/srv/imgs', maxBytes: 1024 });
  });

  it('reads the rate limits and HTTP hardening settings (defaults, overrides, 0 = off)', () => {
    expect(loadConfig({}).rateLimit).toEqual({ orderPerUser: 5, orderPerIp: 200, saleAdmissionPerSecond: 20_000, apiPerIp: 0, apiWindowSeconds: 60 });
    expect(loadConfig({}).http).toEqual({
      corsOrigins: [],
      bodyLimitBytes: 65_536,
      requestTimeoutMs: 30_000,
      connectionTimeoutMs: 120_000,
      keepAliveTimeoutMs: 72_000,
    });
    const config = loadConfig({
      ORDER_RATE_LIMIT_PER_USER: '0',
      ORDER_RATE_LIMIT_PER_IP: '50',
      SECKILL_ADMISSION_RATE: '0',
      API_RATE_LIMIT_PER_IP: '600',
      SMS_INTERVAL_SECONDS: '0',
      HTTP_CONNECTION_TIMEOUT_MS: '0',
      BODY_LIMIT_BYTES: '2048',
    });
    expect(config.rateLimit).toMatchObject({ orderPerUser: 0, orderPerIp: 50, saleAdmissionPerSecond: 0, apiPerIp: 600 });
    expect(config.auth.smsIntervalSeconds).toBe(0);
    expect(config.http).toMatchObject({ connectionTimeoutMs: 0, bodyLimitBytes: 2048 });
  });

  it('reads CORS_ORIGINS as a list of origins, refusing any with a path', () => {
    expect(loadConfig({ CORS_ORIGINS: 'https://a.example.com, http://localhost:5173' }).http.corsOrigins).toEqual([
      'https://a.example.com',
      'http://localhost:5173',
    ]);
    expect(() => loadConfig({ CORS_ORIGINS: 'https://ok.example.com,https://bad.example.com/path' })).toThrow(ConfigError);
    expect(() => loadConfig({ CORS_ORIGINS: 'https://ok.example.com/path' })).toThrow(/CORS_ORIGINS/);
  });

  it.each([
    ['ORDER_RATE_LIMIT_PER_USER', '-1', 'ORDER_RATE_LIMIT_PER_USER'],
    ['SECKILL_ADMISSION_RATE', 'lots', 'SECKILL_ADMISSION_RATE'],
    ['API_RATE_LIMIT_WINDOW_SECONDS', '0', 'API_RATE_LIMIT_WINDOW_SECONDS'],
    ['BODY_LIMIT_BYTES', '10', 'BODY_LIMIT_BYTES'],
    ['CORS_ORIGINS', '*', 'CORS_ORIGINS'],
    ['HTTP_CONNECTION_TIMEOUT_MS', '1000', 'HTTP_CONNECTION_TIMEOUT_MS'],
    ['FEED_MAX_LENGTH', '0', 'FEED_MAX_LENGTH'],
    ['UV_TRACKING', 'yes', 'UV_TRACKING'],
    ['UV_FLUSH_MS', '-1', 'UV_FLUSH_MS'],
    ['UPLOAD_MAX_BYTES', '1MB', 'UPLOAD_MAX_BYTES'],
    ['PORT', 'eighty', 'Invalid environment variable PORT="eighty": expected an integer from 0 to 65535'],
    ['PORT', '70000', 'PORT="70000"'],
    ['REDIS_URL', 'localhost:6379', 'REDIS_URL'],
    ['REDIS_URL', 'http://127.0.0.1:6379', 'expected a redis: or rediss:// URL'],
    ['MYSQL_URL', 'postgres://x@y/z', 'MYSQL_URL'],
    ['LOG_LEVEL', 'loud', 'expected one of fatal, error'],
    ['SESSION_TTL_SECONDS', '0', 'SESSION_TTL_SECONDS'],
    ['REDIS_CLUSTER_NODES', 'a,b', 'REDIS_CLUSTER_NODES'],
    ['TRUST_PROXY', 'maybe', 'TRUST_PROXY'],
    ['TRUST_PROXY', 'true', 'TRUST_PROXY=true: it trusts an X-Forwarded-For the client writes itself'],
    ['SHOP_CACHE_STRATEGY', 'lru', 'expected one of mutex, logical'],
    ['CACHE_TTL_JITTER_PERCENT', '101', 'CACHE_TTL_JITTER_PERCENT'],
    ['SHOP_BLOOM', 'yes', 'expected true or false'],
    ['SHOP_BLOOM_FALSE_POSITIVE_RATE', '1', 'expected a number between 0 and 1 (exclusive)'],
    ['SHOP_BLOOM_FALSE_POSITIVE_RATE', '1%', 'SHOP_BLOOM_FALSE_POSITIVE_RATE'],
    ['ADMIN_USER_IDS', '1', 'ADMIN_USER_IDS is no longer supported: administrators are a role in tb_user now: npm run admin -- grant <phone>'],
    ['PURCHASE_CAPTCHA_MAX_NUMBER', '400', "PURCHASE_CAPTCHA_MAX_NUMBER is no longer supported: a captcha's cost is a setting of each sale now"],
    ['NODE_ENV', 'staging', 'Invalid environment variable NODE_ENV="staging": expected one of development, production, test'],
    ['HTTP_KEEP_ALIVE_TIMEOUT_MS', '200000', 'HTTP_CONNECTION_TIMEOUT_MS=120000: expected 0 or more than HTTP_KEEP_ALIVE_TIMEOUT_MS (200000)'],
    ['SMS_SENDER', 'http', 'SMS_SENDER=http needs SMS_HTTP_URL (the gateway endpoint)'],
    ['SMS_HTTP_URL', 'gateway', 'SMS_HTTP_URL="gateway": expected a URL like https://sms.example.com/send'],
    ['SMS_HTTP_URL', 'ftp://sms.example.com', 'SMS_HTTP_URL="ftp://sms.example.com": expected a http: or https:// URL'],
    ['SMS_HTTP_AUTH_HEADER', 'x api key', 'SMS_HTTP_AUTH_HEADER="x api key": expected a header name'],
    ['SMS_HTTP_BODY', '{"code":{{code}}}', 'SMS_HTTP_BODY="{\\"code\\":{{code}}}": expected JSON with {{phone}}, {{code}}, {{minutes}}'],
    ['PURCHASE_TOKEN_KEYS', 'k1:short', 'Invalid environment variable PURCHASE_TOKEN_KEYS: expected kid:secret,...'],
    ['METRICS_TOKEN', 'short', 'Invalid environment variable METRICS_TOKEN: expected at least 16 characters without spaces'],
  ])('rejects %s=%s with a message naming the variable', (name, value, message) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(message);
  });
});

describe('settings that depend on others', () => {
  it('LOG_LEVEL defaults to silent in tests and to info elsewhere', () => {
    expect(loadConfig({ NODE_ENV: 'test' }).logLevel).toBe('silent');
    expect(loadConfig({ NODE_ENV: 'production', SMS_SENDER: 'log' }).logLevel).toBe('info');
    expect(loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'debug' }).logLevel).toBe('debug');
  });

  it('credentials are never echoed in a refusal', () => {
    expect(() => loadConfig({ PURCHASE_TOKEN_KEYS: 'k1:hunter2' })).not.toThrow(/hunter2/);
    expect(() => loadConfig({ METRICS_TOKEN: 'hunter2' })).not.toThrow(/hunter2/);
  });
});

describe('TRUST_PROXY (issue #17)', () => {
  it('reads a number of proxy hops, addresses, or nothing', () => {
    expect(loadConfig({ TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(loadConfig({ TRUST_PROXY: '127.0.0.1, 10.0.0.0/8' }).trustProxy).toBe('127.0.0.1,10.0.0.0/8');
    expect(loadConfig({}).trustProxy).toBe(false);
  });
});

describe('SECKILL_QUEUE and RabbitMQ (issue 31)', () => {
  it('defaults to the stream path and the local broker; reads a cluster as a list of URLs', () => {
    const defaults = loadConfig({});
    expect(defaults.seckill.queue).toBe('stream');
    expect(defaults.seckill.rabbitmq).toMatchObject({ urls: ['amqp://guest:guest@127.0.0.1:5672/'], prefetch: 200, publishWindow: 100, maxLength: 200_000 });
    const cluster = loadConfig({ SECKILL_QUEUE: 'rabbitmq', RABBITMQ_URL: 'amqp://u:p@10.0.0.1:5672/sale, amqp://u:p@10.0.0.2:5673/sale' });
    expect(cluster.seckill.queue).toBe('rabbitmq');
    expect(cluster.seckill.rabbitmq.urls).toEqual(['amqp://u:p@10.0.0.1:5672/sale', 'amqp://u:p@10.0.0.2:5673/sale']);
  });

  it.each([
    ['SECKILL_QUEUE', 'kafka', 'expected one of stream, rabbitmq'],
    ['RABBITMQ_URL', 'http://127.0.0.1:5672', 'RABBITMQ_URL: expected amqp:// or amqps:// URLs'],
    ['RABBITMQ_URL', 'amqp://u:p@a:5672/one,amqp://u:p@b:5672/two', 'RABBITMQ_URL: expected amqp:// or amqps:// URLs'],
    ['SECKILL_RABBITMQ_PREFETCH', '0', 'SECKILL_RABBITMQ_PREFETCH'],
  ])('rejects %s=%s with a message naming the variable', (name, value, message) => {
    expect(() => loadConfig({ [name]: value })).toThrow(message);
  });

  it('never echoes the broker password in a refusal', () => {
    expect(() => loadConfig({ RABBITMQ_URL: 'amqp://u:hunter2@a:5672/x,amqp://u:other@b:5672/x' })).toThrow(ConfigError);
    expect(() => loadConfig({ RABBITMQ_URL: 'amqp://u:hunter2@a:5672/x,amqp://u:other@b:5672/x' })).not.toThrow(/hunter2/);
  });
});
