import type { Cache, CacheClient } from '../../lib/cache/index.js';
import type { ShopTypeRepository, ShopTypeView } from './shop-type-repository.js';
import { CACHE_NAMES, SHOP_TYPE_CACHE_KEY } from './keys.js';

/**
 * Shop types: a small list that almost never changes, read on every home page. Cached whole
 * under one key with a TTL (hmdp's "low consistency need" case); the app has no write path: the
 * change follower (src/modules/cdc) invalidates it when tb_shop_type changes, the TTL bounds the rest.
 */
export class ShopTypeService {
  private readonly cache: Cache<ShopTypeView[]>;

  constructor(
    private readonly types: ShopTypeRepository,
    caches: CacheClient,
    options: { ttlMs: number; jitterPercent: number; waitMs: number },
  ) {
    this.cache = caches.define<ShopTypeView[]>({
      name: CACHE_NAMES.shopType,
      key: () => SHOP_TYPE_CACHE_KEY,
      load: () => this.types.listAll(),
      ttlMs: options.ttlMs,
      jitterPercent: options.jitterPercent,
      waitMs: options.waitMs,
    });
  }

  async list(): Promise<ShopTypeView[]> {
    return (await this.cache.get('all')) ?? [];
  }

  /** After tb_shop_type changed (the change follower, src/modules/cdc): every instance reloads the list. */
  invalidate(): Promise<void> {
    return this.cache.invalidate('all');
  }

  exists(typeId: string): Promise<boolean> {
    return this.types.exists(typeId);
  }
}
