/**
 * Every Redis key of shops and shop types (hmdp's names):
 *
 *   cache:shop:{id}       JSON of a shop (or a null marker), TTL or logical expiry (src/lib/cache)
 *   cache:type            JSON list of shop types
 *   shop:geo:{typeId}     GEO set of the type's shops, member = shop id
 *   bloom:{shop}[:building]   id Bloom filter (SHOP_BLOOM) and its rebuild copy (src/lib/cache, name SHOP_BLOOM_NAME)
 *   lock:{shop:{id}}, lock:{shop-type:all}, lock:{bloom-rebuild:shop}   rebuild locks (src/lib/lock)
 */

/** Names the cache library builds keys and locks from. */
export const SHOP_BLOOM_NAME = 'shop';
export const CACHE_NAMES = { shop: 'shop', shopType: 'shop-type' } as const;

export const shopCacheKey = (id: string): string => `cache:shop:${id}`;

/** The one key of the type list (hmdp's `cache:type`). */
export const SHOP_TYPE_CACHE_KEY = 'cache:type';

/** One GEO set (sorted set) per shop type, members = shop ids (hmdp's `shop:geo:{typeId}`). */
export const geoKey = (typeId: string): string => `shop:geo:${typeId}`;
