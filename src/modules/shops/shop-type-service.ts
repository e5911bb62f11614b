import type { Cache, CacheClient } from '../../lib/cache/index.js';
import type { ShopTypeRepository, ShopTypeView } from './shop-type-repository.js';

/** The one key of the type list (hmdp's `cache:type`). */
export const SHOP_TYPE_CACHE_KEY = 'cache:type';

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
      name: 'shop-type',
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
