import { Cluster } from 'ioredis';
import type { Db } from '../../infra/db.js';
import type { RedisClient } from '../../infra/redis.js';
import type { CacheClient } from '../../lib/cache/index.js';
import type { CommittedTransaction } from '../../lib/cdc/index.js';
import { voucherListCacheKey } from '../seckill/index.js';
import { SHOP_TYPE_CACHE_KEY, shopCacheKey, type ShopGeoIndex, type Shops } from '../shops/index.js';
import { invalidationsOf } from './followed-tables.js';

/** Keys SCANned per call when every entry of a kind is dropped. */
const SCAN_COUNT = 500;

export interface CacheInvalidatorDeps {
  redis: RedisClient;
  db: Db;
  shops: Shops;
  geo: ShopGeoIndex;
  /** The client whose invalidations announce themselves on the changes channel (the edge's L1). */
  caches: CacheClient;
  keyPrefix: string;
}

/**
 * Turns committed row changes of the followed tables into the app's own invalidations, at every
 * level: Redis (tombstones, as PUT /api/shop writes them), the near caches (Redis client tracking
 * sees the write) and the edge's L1 (the PUBLISH on the changes channel). Each is idempotent.
 */
export class CacheInvalidator {
  constructor(private readonly deps: CacheInvalidatorDeps) {}

  async apply(batch: readonly CommittedTransaction[]): Promise<void> {
    const plan = invalidationsOf(batch.flatMap((transaction) => transaction.changes));
    const { shops, caches } = this.deps;
    // A shop's changes in commit order (its GEO member moves step by step); different shops at once.
    const byShop = new Map<string, typeof plan.shops>();
    for (const change of plan.shops) {
      const id = (change.after ?? change.before)!.id;
      byShop.set(id, [...(byShop.get(id) ?? []), change]);
    }
    await Promise.all(
      [...byShop.values()].map(async (changes) => {
        for (const { before, after } of changes) await shops.shopService.followRowChange(before, after);
      }),
    );
    if (plan.shopTypes) await shops.shopTypeService.invalidate();
    for (const shopId of await this.shopsOf(plan.vouchersOfUnknownShop)) plan.voucherListShops.add(shopId);
    await Promise.all([...plan.voucherListShops].map((shopId) => caches.invalidateKey(voucherListCacheKey(shopId))));
  }

  /**
   * After a gap in what was read (no saved position, or its binlog purged): every cached entry of
   * the followed tables invalidated (each announced, so the edge drops it too), the GEO sets and
   * the Bloom filter rebuilt from MySQL. Returns how many entries were invalidated.
   */
  async dropAll(): Promise<number> {
    const { shops, caches, geo } = this.deps;
    let dropped = 0;
    for (const pattern of [shopCacheKey('*'), voucherListCacheKey('*')]) {
      for await (const keys of this.scan(pattern)) {
        await Promise.all(keys.map((key) => caches.invalidateKey(key)));
        dropped += keys.length;
      }
    }
    await caches.invalidateKey(SHOP_TYPE_CACHE_KEY);
    await geo.loadAll();
    if (shops.shopService.bloomEnabled) await shops.shopService.rebuildBloomFilter();
    return dropped + 1;
  }

  /** Keys matching `pattern` under the app's prefix, without it, a page at a time. */
  private async *scan(pattern: string): AsyncGenerator<string[]> {
    const { redis, keyPrefix } = this.deps;
    // A Cluster's keys are spread over its masters: each is scanned (SCAN takes no key prefix).
    const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis];
    for (const node of nodes) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', `${escapeGlob(keyPrefix)}${pattern}`, 'COUNT', SCAN_COUNT);
        cursor = next;
        // Tombstones of an earlier pass match too: invalidating them again is harmless.
        if (keys.length > 0) yield keys.map((key) => key.slice(keyPrefix.length));
      } while (cursor !== '0');
    }
  }

  private async shopsOf(voucherIds: Set<string>): Promise<string[]> {
    if (voucherIds.size === 0) return [];
    const rows = await this.deps.db
      .selectFrom('tb_voucher')
      .select('shop_id')
      .where('id', 'in', [...voucherIds])
      .execute();
    return rows.map((row) => row.shop_id);
  }
}

const escapeGlob = (text: string): string => text.replace(/[*?[\]\\]/g, (char) => `\\${char}`);
