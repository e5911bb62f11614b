import { invalid, notFound } from '../../lib/refusals/index.js';
import type { BloomFilter, Cache, CacheClient, CacheStrategy } from '../../lib/cache/index.js';
import type { ShopTypeRepository } from './shop-type-repository.js';
import { isIndexable, type ShopGeoIndex } from './geo-index.js';
import type { NewShop, ShopChanges, ShopPoint, ShopRepository, ShopRow } from './shop-repository.js';
import { CACHE_NAMES, shopCacheKey } from './keys.js';
import { SHOP_MESSAGES } from './messages.js';

/** hmdp's page sizes: 5 for shops by type (DEFAULT_PAGE_SIZE), 10 for search by name (MAX_PAGE_SIZE). */
export const SHOPS_BY_TYPE_PAGE_SIZE = 5;
export const SHOPS_BY_NAME_PAGE_SIZE = 10;

/** A shop as the front end reads it (hmdp's Shop entity); `distance` in metres on a GEO search. */
export interface ShopView {
  id: string;
  name: string;
  typeId: string;
  images: string;
  area: string;
  address: string;
  /** Longitude. */
  x: number;
  /** Latitude. */
  y: number;
  /** Yuan per person. */
  avgPrice: number;
  sold: number;
  comments: number;
  /** Stars × 10 (45 = 4.5 stars). */
  score: number;
  openHours: string;
  createTime: string;
  updateTime: string;
  distance?: number;
}

export interface ShopFields {
  name: string;
  typeId: string;
  images?: string;
  area?: string;
  address: string;
  x: number;
  y: number;
  avgPrice?: number;
  sold?: number;
  comments?: number;
  score?: number;
  openHours?: string;
}

export type ShopUpdate = Partial<ShopFields> & { id: string };

export interface ShopCacheOptions {
  strategy: CacheStrategy;
  ttlMs: number;
  nullTtlMs: number;
  jitterPercent: number;
  waitMs: number;
  /** Check the Bloom filter before loading a shop Redis does not have. */
  useBloom: boolean;
}

export interface ShopServiceDeps {
  shops: ShopRepository;
  types: ShopTypeRepository;
  geo: ShopGeoIndex;
  /** Kept in step on every create, used on reads only when `cache.useBloom`. */
  bloom: BloomFilter;
  caches: CacheClient;
  cache: ShopCacheOptions;
}

export class ShopService {
  /** `cache:shop:{id}`, strategy from config; its loader is the only place a shop is read by id. */
  readonly cache: Cache<ShopView>;
  private readonly shops: ShopRepository;
  private readonly types: ShopTypeRepository;
  private readonly geo: ShopGeoIndex;
  private readonly bloom: BloomFilter;
  private readonly useBloom: boolean;

  constructor(deps: ShopServiceDeps) {
    ({ shops: this.shops, types: this.types, geo: this.geo, bloom: this.bloom } = deps);
    this.useBloom = deps.cache.useBloom;
    this.cache = deps.caches.define<ShopView>({
      name: CACHE_NAMES.shop,
      key: shopCacheKey,
      load: async (id) => {
        const row = await this.shops.findById(id);
        return row ? toView(row) : null;
      },
      strategy: deps.cache.strategy,
      ttlMs: deps.cache.ttlMs,
      nullTtlMs: deps.cache.nullTtlMs,
      jitterPercent: deps.cache.jitterPercent,
      waitMs: deps.cache.waitMs,
      ...(deps.cache.useBloom ? { filter: deps.bloom } : {}),
    });
  }

  async get(id: string): Promise<ShopView> {
    const shop = await this.cache.get(id);
    if (!shop) throw notFound(SHOP_MESSAGES.shopNotFound({ id }));
    return shop;
  }

  /**
   * One transaction: the row, then (before the commit makes the shop visible) its Bloom filter
   * bits and GEO position; any failure rolls all back. After the commit: the Bloom bits once more
   * and the cache key invalidated, which drops a null marker left by someone who asked for this
   * id before it existed.
   */
  async create(fields: ShopFields): Promise<string> {
    await this.assertTypeExists(fields.typeId);
    // Before the transaction (a lazy load uses another connection and would not see the new row).
    await this.geo.ensureLoaded(fields.typeId);
    const id = await this.shops.insert(toColumns(fields) as NewShop, async (newId) => {
      await this.bloom.add(newId);
      await this.geo.add({ id: newId, typeId: fields.typeId, x: fields.x, y: fields.y });
    });
    // Again after the commit: a filter rebuild that began between the first add and the commit
    // read the table without this uncommitted row, and its swap would drop the first add.
    await this.bloom.add(id);
    await this.cache.invalidate(id);
    return id;
  }

  /** hmdp's order: write MySQL (one transaction), invalidate the cache, then move the GEO member. */
  async update({ id, ...fields }: ShopUpdate): Promise<void> {
    if (fields.typeId !== undefined) await this.assertTypeExists(fields.typeId);
    const result = await this.shops.update(id, toColumns(fields));
    if (!result) throw notFound(SHOP_MESSAGES.shopNotFound({ id }));
    await this.cache.invalidate(id);
    await this.geo.move(toPoint(result.before), toPoint(result.after));
  }

  /**
   * A tb_shop row written outside this service (read from the binlog by the change follower,
   * src/modules/cdc), after its commit: the cache entry invalidated (tombstone and announcement, as
   * update() does), a new id added to the Bloom filter, the GEO member added, moved or removed. A
   * deleted id stays in the filter (a Bloom filter cannot forget one): its reads load once and
   * cache the null marker. Idempotent: a replayed change does the same again.
   */
  async followRowChange(before: ShopPoint | undefined, after: ShopPoint | undefined): Promise<void> {
    const id = (after ?? before)!.id;
    if (after !== undefined && before === undefined) await this.bloom.add(id);
    await this.cache.invalidate(id);
    if (after === undefined || !isIndexable(after)) {
      if (before !== undefined) await this.geo.remove(before);
      return;
    }
    if (before === undefined) {
      await this.geo.ensureLoaded(after.typeId); // committed: a load from MySQL has the row already
      await this.geo.add(after);
    } else if (before.typeId !== after.typeId || before.x !== after.x || before.y !== after.y) {
      await this.geo.move(before, after);
    }
  }

  /** Builds the Bloom filter again from tb_shop (after a gap in what the change follower read). */
  async rebuildBloomFilter(): Promise<number> {
    return this.bloom.rebuild(() => this.shops.idBatches());
  }

  /**
   * Shops of a type, page `current` (1-based, 5 per page). With the user's position: nearest
   * first within 5 km, each with `distance` in metres (Redis GEO); without: by id (MySQL).
   */
  async ofType(typeId: string, current: number, position?: { x: number; y: number }): Promise<ShopView[]> {
    const from = (current - 1) * SHOPS_BY_TYPE_PAGE_SIZE;
    if (!position) return (await this.shops.pageByType(typeId, from, SHOPS_BY_TYPE_PAGE_SIZE)).map(toView);
    const hits = await this.geo.search(typeId, position.x, position.y, from, SHOPS_BY_TYPE_PAGE_SIZE);
    const rows = new Map((await this.shops.findByIds(hits.map((hit) => hit.id))).map((row) => [row.id, row]));
    // MySQL decides: a member whose shop is gone or changed type (an index not yet in step) is left out.
    return hits.flatMap((hit) => {
      const row = rows.get(hit.id);
      return row && row.type_id === typeId ? [{ ...toView(row), distance: hit.distance }] : [];
    });
  }

  /** Shops whose name contains `name` (all shops without one), page `current`, 10 per page. */
  async ofName(name: string | undefined, current: number): Promise<ShopView[]> {
    const from = (current - 1) * SHOPS_BY_NAME_PAGE_SIZE;
    return (await this.shops.pageByName(name?.trim() || undefined, from, SHOPS_BY_NAME_PAGE_SIZE)).map(toView);
  }

  /** Builds the Bloom filter if Redis has none usable (first start, lost data, new parameters). */
  async ensureBloomFilter(): Promise<number | null> {
    return this.bloom.ensureBuilt(() => this.shops.idBatches());
  }

  get bloomEnabled(): boolean {
    return this.useBloom;
  }

  private async assertTypeExists(typeId: string): Promise<void> {
    if (!(await this.types.exists(typeId))) throw invalid(SHOP_MESSAGES.shopTypeMissing({ typeId }));
  }
}

export function toView(row: ShopRow): ShopView {
  return {
    id: row.id,
    name: row.name,
    typeId: row.type_id,
    images: row.images,
    area: row.area,
    address: row.address,
    x: row.x,
    y: row.y,
    avgPrice: Number(row.avg_price),
    sold: row.sold,
    comments: row.comments,
    score: row.score,
    openHours: row.open_hours,
    createTime: row.create_time.toISOString(),
    updateTime: row.update_time.toISOString(),
  };
}

const toPoint = (row: ShopRow): ShopPoint => ({ id: row.id, typeId: row.type_id, x: row.x, y: row.y });

/** The given fields as columns; absent fields stay out (an update changes only what it names). */
function toColumns(fields: Partial<ShopFields>): ShopChanges {
  const columns: ShopChanges = {};
  if (fields.name !== undefined) columns.name = fields.name;
  if (fields.typeId !== undefined) columns.type_id = fields.typeId;
  if (fields.images !== undefined) columns.images = fields.images;
  if (fields.area !== undefined) columns.area = fields.area;
  if (fields.address !== undefined) columns.address = fields.address;
  if (fields.x !== undefined) columns.x = fields.x;
  if (fields.y !== undefined) columns.y = fields.y;
  if (fields.avgPrice !== undefined) columns.avg_price = String(fields.avgPrice);
  if (fields.sold !== undefined) columns.sold = fields.sold;
  if (fields.comments !== undefined) columns.comments = fields.comments;
  if (fields.score !== undefined) columns.score = fields.score;
  if (fields.openHours !== undefined) columns.open_hours = fields.openHours;
  return columns;
}
