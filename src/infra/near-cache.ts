import type { Config } from './config.js';
import type { Log } from './logging.js';
import type { Metrics } from './metrics.js';
import type { RedisClient } from './redis.js';
import { NearCache, PassThroughReader, type KeyReader } from '../lib/near-cache/index.js';

/** How long start() waits for tracking before the app serves anyway (reads are then uncached until it is on). */
const TRACKING_START_WAIT_MS = 2_000;

/** Connection errors of the near cache are logged at most this often (a Redis restart makes dozens). */
const ERROR_LOG_INTERVAL_MS = 10_000;

export interface AppNearCache {
  /** What the shop, shop-type, voucher-list, sale-stock and session reads go through. */
  reader: KeyReader;
  start(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The process's near cache (NEAR_CACHE_*): a NearCache on its own tracked connections to the
 * app's Redis (or Cluster), counted in near_cache_events_total; or, turned off, a pass-through
 * that reads Redis every time.
 */
export function createNearCache(config: Config['nearCache'], redis: RedisClient, metrics: Metrics, log: Log): AppNearCache {
  if (!config.enabled) return { reader: new PassThroughReader(redis), start: async () => {}, close: async () => {} };
  let lastLogged = 0;
  const near = new NearCache(redis, {
    maxEntries: config.maxEntries,
    ttlMs: config.ttlMs,
    stats: { record: (cache, event) => metrics.nearCacheEvents.inc({ cache, event }) },
    onError: (err, { what }) => {
      if (Date.now() - lastLogged < ERROR_LOG_INTERVAL_MS) return;
      lastLogged = Date.now();
      log.warn({ err, what }, 'near cache: tracking unavailable, reads go to Redis until it is back');
    },
  });
  return {
    reader: near,
    async start() {
      if (!(await near.start(TRACKING_START_WAIT_MS))) log.warn('near cache: tracking not on yet; reads go to Redis until it is');
    },
    close: () => near.close(),
  };
}
