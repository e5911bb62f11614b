import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../../infra/config.js';
import type { Db } from '../../infra/db.js';
import type { Log } from '../../infra/logging.js';
import type { Metrics } from '../../infra/metrics.js';
import type { RedisClient } from '../../infra/redis.js';
import { BloomFilter, CacheClient, combineStats, type CacheStats, type KeyReader } from '../../lib/cache/index.js';
import type { LockClient } from '../../lib/lock/index.js';
import { ShopGeoIndex } from './geo-index.js';
import { cacheChangesChannel } from '../../infra/cache-changes.js';
import { SHOP_BLOOM_NAME } from './keys.js';
import { ShopRepository } from './shop-repository.js';
import { shopRoutes } from './shop-routes.js';
import { ShopService } from './shop-service.js';
import { ShopTypeRepository } from './shop-type-repository.js';
import { shopTypeRoutes } from './shop-type-routes.js';
import { ShopTypeService } from './shop-type-service.js';

// What the app and the CLIs use besides buildShops.
export { ShopGeoIndex } from './geo-index.js';
export { geoKey, SHOP_TYPE_CACHE_KEY, shopCacheKey } from './keys.js';
export type { ShopPoint } from './shop-repository.js';
export { ShopRepository } from './shop-repository.js';
export { SHOP_MESSAGES } from './messages.js';

export interface ShopsDeps {
  config: Pick<Config, 'shop' | 'cache' | 'redisKeyPrefix'>;
  redis: RedisClient;
  db: Db;
  log: Log;
  metrics: Metrics;
  /** The process's lock client: cache rebuild and Bloom filter rebuild locks. */
  locks: LockClient;
  /** Defaults to the MySQL repository; tests wrap it to count or slow down loads. */
  shopRepository?: ShopRepository;
  /** Receives cache events besides the Prometheus counter (tests, tools). */
  cacheStats?: CacheStats;
  /** The process's near cache, in front of `cache:shop:{id}` and `cache:type` (default: none, one GET per read). */
  near?: KeyReader;
}

export type Shops = ReturnType<typeof buildShops>;

/** Shops and shop types on the cache client (src/lib/cache), the GEO index and the id Bloom filter. */
export function buildShops(deps: ShopsDeps) {
  const { config, redis, db, log, metrics, locks } = deps;
  const caches = new CacheClient(redis, {
    locks,
    stats: combineStats({ record: (cache, result) => metrics.cacheRequests.inc({ cache, result }) }, deps.cacheStats),
    onError: (err, context) => log.warn({ err, ...context }, 'background cache rebuild failed'),
    ...(deps.near ? { reader: deps.near } : {}),
    // The edge keeps built answers of these keys (L1) and drops them when one is written.
    changeChannel: cacheChangesChannel(config.redisKeyPrefix),
  });
  const shopRepository = deps.shopRepository ?? new ShopRepository(db);
  const typeRepository = new ShopTypeRepository(db);
  const shopService = new ShopService({
    shops: shopRepository,
    types: typeRepository,
    geo: new ShopGeoIndex(redis, shopRepository),
    bloom: new BloomFilter(redis, {
      name: SHOP_BLOOM_NAME,
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
  const routes: FastifyPluginAsync = async (api) => {
    await api.register(shopTypeRoutes, { service: shopTypeService });
    await api.register(shopRoutes, { service: shopService });
  };
  return {
    shopService,
    shopTypeService,
    caches,
    routes,
    /** Builds the Bloom filter if it is on and missing (best effort: without it nothing is rejected). */
    async start(): Promise<void> {
      if (!config.shop.bloom) return;
      try {
        const added = await shopService.ensureBloomFilter();
        if (added !== null) log.info({ shops: added }, 'built the shop Bloom filter');
      } catch (err) {
        log.warn({ err }, 'could not build the shop Bloom filter at start');
      }
    },
    /** Waits for background cache rebuilds. */
    async close(): Promise<void> {
      await caches.idle();
    },
  };
}
