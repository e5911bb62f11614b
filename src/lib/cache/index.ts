export { Cache, CacheClient, type CacheClientOptions, type CacheDefinition, type CacheStrategy, type IdFilter } from './cache-client.js';
export { BloomFilter, bloomParameters, type BloomAnswer, type BloomFilterOptions, type IdSource } from './bloom-filter.js';
export { SingleFlight } from './single-flight.js';
export { CACHE_EVENTS, CacheCounters, combineStats, type CacheEvent, type CacheStats, type KeyReader, type KeyReadOptions, type RedisClient } from './types.js';
