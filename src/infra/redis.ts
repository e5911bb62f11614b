import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { Config } from './config.js';
import { redactUrl } from './redact.js';

/** A standalone Redis or a Redis Cluster: application code must work with either. */
export type RedisClient = Redis | Cluster;

type RedisConfig = Pick<Config, 'redisUrl' | 'redisClusterNodes' | 'redisKeyPrefix'> & { deadlines?: Pick<Config['deadlines'], 'redisCommandMs'> };

export interface RedisClientOptions {
  /**
   * Told of connection errors (at most one every 10 s per client, with how many were skipped), for
   * this client and every duplicate() of it. Default: one line on stderr.
   */
  onError?: (err: Error, skipped: number) => void;
}

/** Added to the command timeout for blocking reads with no BLOCK time of their own (see duplicateRedis). */
const BLOCKING_SAFETY_NET_MS = 5_000;

/** Connection errors of one client are reported at most this often (a restart makes dozens a second). */
const ERROR_REPORT_INTERVAL_MS = 10_000;

/**
 * A client of the configured Redis. With `deadlines`, every command is bounded
 * (`commandTimeout`: a silent server fails it with "Command timed out" instead of hanging the
 * caller; the connection stays, so answers resume when the server does) and so is the TCP connect.
 */
export function createRedis(config: RedisConfig, options: RedisClientOptions = {}): RedisClient {
  const timeoutMs = config.deadlines?.redisCommandMs;
  const common: RedisOptions = {
    keyPrefix: config.redisKeyPrefix,
    // Fail a command fast while disconnected instead of queueing it forever.
    maxRetriesPerRequest: 3,
    enableAutoPipelining: true,
    ...(timeoutMs === undefined ? {} : { commandTimeout: timeoutMs, connectTimeout: timeoutMs }),
  };
  const report = options.onError ?? defaultErrorReport(redisAddress(config));
  if (config.redisClusterNodes.length > 0) {
    const nodes = config.redisClusterNodes.map((node) => {
      const [host, port] = node.split(':');
      return { host: host!, port: Number(port) };
    });
    return reportErrors(new Cluster(nodes, { keyPrefix: config.redisKeyPrefix, redisOptions: common }), report);
  }
  return reportErrors(new Redis(config.redisUrl, common), report);
}

/** Where the configured Redis is, for messages: the URL without its password, or the cluster's nodes. */
export function redisAddress(config: Pick<Config, 'redisUrl' | 'redisClusterNodes'>): string {
  return config.redisClusterNodes.length > 0 ? `cluster ${config.redisClusterNodes.join(',')}` : redactUrl(config.redisUrl);
}

function defaultErrorReport(address: string): (err: Error, skipped: number) => void {
  return (err, skipped) => {
    console.error(`redis ${address}: connection error: ${err.message}${skipped > 0 ? ` (${skipped} more since the last report)` : ''}`);
  };
}

/**
 * ioredis prints "[ioredis] Unhandled error event" for every failed reconnect of a client without
 * an 'error' listener (dozens during a Redis restart), and duplicate() makes clients without one
 * (blocking readers, subscribers, WAIT connections): give this client and its duplicates a
 * rate-limited listener.
 */
function reportErrors<T extends RedisClient>(client: T, report: (err: Error, skipped: number) => void): T {
  let last = 0;
  let skipped = 0;
  const listener = (err: Error): void => {
    const now = Date.now();
    if (now - last < ERROR_REPORT_INTERVAL_MS) {
      skipped++;
      return;
    }
    last = now;
    report(err, skipped);
    skipped = 0;
  };
  client.on('error', listener);
  if (client instanceof Cluster) client.on('node error', listener);
  const duplicate = client.duplicate.bind(client) as (...args: unknown[]) => T;
  (client as unknown as { duplicate: (...args: unknown[]) => T }).duplicate = (...args) => reportErrors(duplicate(...args), report);
  return client;
}

/**
 * A connection of its own with another command timeout: `null` for none (blocking reads, which
 * hold the connection on purpose; ioredis's `blockingTimeout` then bounds each XREADGROUP BLOCK
 * n at n + 100 ms, so a stalled server still cannot hang the reader), or a number (e.g. a WAIT
 * that may take its own timeout on top of the usual bound).
 */
export function duplicateRedis(redis: RedisClient, commandTimeoutMs: number | null): RedisClient {
  const bound = commandTimeoutOf(redis);
  if (bound === undefined && commandTimeoutMs !== null) return redis.duplicate();
  // blockingTimeout is ioredis's safety net for a blocking read without a BLOCK time, and for one
  // queued while the connection is not up yet (it fixes the read's deadline then): not shorter
  // than a usual BLOCK, or the first read of a fresh connection would be cut short.
  const override: Partial<RedisOptions> =
    commandTimeoutMs === null
      ? { commandTimeout: undefined, ...(bound === undefined ? {} : { blockingTimeout: bound + BLOCKING_SAFETY_NET_MS }) }
      : { commandTimeout: commandTimeoutMs };
  if (redis instanceof Cluster) return redis.duplicate([], { redisOptions: { ...redis.options.redisOptions, ...override } });
  return redis.duplicate(override);
}

/** The command timeout of a client made by createRedis (undefined: none). */
export function commandTimeoutOf(redis: RedisClient): number | undefined {
  const base = redis instanceof Cluster ? redis.options.redisOptions : redis.options;
  return base?.commandTimeout;
}

/** Closes politely (QUIT) and falls back to a hard disconnect if Redis is unreachable. */
export async function closeRedis(redis: RedisClient): Promise<void> {
  if (redis.status === 'end') return;
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}

/**
 * Deletes every key that starts with `prefix` (SCAN + UNLINK, never KEYS or FLUSHDB), through a
 * client without a key prefix. For tests, benchmarks and tools that own a prefix on a shared Redis.
 */
export async function deleteKeysWithPrefix(redis: Redis, prefix: string): Promise<number> {
  if (prefix === '') throw new Error('refusing to delete every key: the prefix is empty');
  let deleted = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`, 'COUNT', 1000);
    if (keys.length > 0) deleted += await redis.unlink(...keys);
    cursor = next;
  } while (cursor !== '0');
  return deleted;
}
