import type { Cache, CacheClient } from '../../lib/cache/index.js';
import type { ShopTypeRepository, ShopTypeView } from './shop-type-repository.js';
import { CACHE_NAMES, SHOP_TYPE_CACHE_KEY } from './keys.js';

/**
 * Shop types: a small list that almost never changes, read on every home page. Cached whole
 * under one key with a TTL (hmdp's "low consistency need" case); no write path exists, so the
 * TTL is the only refresh.
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

  exists(typeId: string): Promise<boolean> {
    return this.types.exists(typeId);
  }
}
