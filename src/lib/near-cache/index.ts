export { NearCache, PassThroughReader, type NearCacheOptions } from './near-cache.js';
export { INVALIDATE_CHANNEL } from './node-tracking.js';
export {
  NEAR_CACHE_EVENTS,
  NearCacheCounters,
  type Fetch,
  type KeyReader,
  type NearCacheEvent,
  type NearCacheStats,
  type ReadOptions,
  type RedisClient,
} from './types.js';
