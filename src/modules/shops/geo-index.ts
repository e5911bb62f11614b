import type { RedisClient } from '../../infra/redis.js';
import { SingleFlight } from '../../lib/cache/index.js';
import type { ShopPoint, ShopRepository } from './shop-repository.js';
import { geoKey } from './keys.js';

/** hmdp searches within 5 km of the user. */
export const SEARCH_RADIUS_METERS = 5000;

/** Redis GEO accepts these (EPSG:3857 limits); anything else makes GEOADD fail. */
export const LONGITUDE_LIMIT = 180;
export const LATITUDE_LIMIT = 85.05112878;

const BATCH = 500;

export interface GeoHit {
  id: string;
  /** Metres from the searched point. */
  distance: number;
}

export interface GeoLoadReport {
  types: number;
  shops: number;
  /** Members pruned because their shop is gone or has another type now. */
  removed: number;
  /** Shops skipped because their coordinates are outside what Redis GEO accepts. */
  invalid: number;
}

/** Whether Redis GEO accepts the point's coordinates. */
export const isIndexable = (point: ShopPoint): boolean => Math.abs(point.x) <= LONGITUDE_LIMIT && Math.abs(point.y) <= LATITUDE_LIMIT;

/**
 * The GEO side of shops: kept in step by the shop service on writes, loaded from MySQL by
 * `npm run geo:load` (all types) and lazily per type when a search finds its key missing.
 * Keys of different types live in different Cluster slots; nothing touches two in one command.
 */
export class ShopGeoIndex {
  private readonly loads = new SingleFlight<void>();

  constructor(
    private readonly redis: RedisClient,
    private readonly shops: ShopRepository,
  ) {}

  /**
   * GEOADD of one shop. Call ensureLoaded(typeId) first: adding to a missing key would create a
   * set holding only this shop, which the lazy load would then take for complete.
   */
  async add(point: ShopPoint): Promise<void> {
    await this.redis.geoadd(geoKey(point.typeId), point.x, point.y, point.id);
  }

  /**
   * After an update: the shop at its new place, then gone from its old type's set (in this
   * order, so a concurrent search sees it twice at worst, never nowhere; searches drop shops
   * whose type is not the one searched).
   */
  async move(before: ShopPoint, after: ShopPoint): Promise<void> {
    await this.ensureLoaded(after.typeId); // committed: a load from MySQL already has the new row
    await this.add(after);
    if (before.typeId !== after.typeId) await this.redis.zrem(geoKey(before.typeId), before.id);
  }

  /** The shop gone from its type's set (deleted, or moved where GEO cannot place it). */
  async remove(point: ShopPoint): Promise<void> {
    await this.redis.zrem(geoKey(point.typeId), point.id);
  }

  /**
   * Shops of a type within 5 km of (x, y), nearest first: hmdp's paging (GEOSEARCH ... COUNT
   * from + limit, then skip `from`). Loads the type's key from MySQL first if it is missing.
   */
  async search(typeId: string, x: number, y: number, from: number, limit: number): Promise<GeoHit[]> {
    await this.ensureLoaded(typeId);
    const reply = (await this.redis.geosearch(
      geoKey(typeId),
      'FROMLONLAT',
      x,
      y,
      'BYRADIUS',
      SEARCH_RADIUS_METERS,
      'm',
      'ASC',
      'COUNT',
      from + limit,
      'WITHDIST',
    )) as Array<[string, string]>;
    return reply.slice(from).map(([id, distance]) => ({ id, distance: Number(distance) }));
  }

  /** A fresh machine, a lost or evicted key: rebuild this type's set from MySQL (once per process at a time). */
  async ensureLoaded(typeId: string): Promise<void> {
    if ((await this.redis.exists(geoKey(typeId))) === 1) return;
    await this.loads.run(typeId, async () => {
      for await (const points of this.shops.pointBatches({ typeId })) await this.addAll(typeId, points);
    });
  }

  /**
   * Every type's set from tb_shop: adds or moves every shop, then removes members whose shop is
   * gone or has another type. Real shops are never missing from their set meanwhile.
   */
  async loadAll(): Promise<GeoLoadReport> {
    const report: GeoLoadReport = { types: 0, shops: 0, removed: 0, invalid: 0 };
    for (const typeId of await this.shops.typeIds()) {
      const wanted = new Set<string>();
      for await (const points of this.shops.pointBatches({ typeId })) {
        const valid = points.filter(isIndexable);
        report.invalid += points.length - valid.length;
        await this.addAll(typeId, valid);
        valid.forEach((point) => wanted.add(point.id));
      }
      const extra = (await this.members(typeId)).filter((id) => !wanted.has(id));
      for (let i = 0; i < extra.length; i += BATCH) await this.redis.zrem(geoKey(typeId), ...extra.slice(i, i + BATCH));
      report.types += 1;
      report.shops += wanted.size;
      report.removed += extra.length;
    }
    return report;
  }

  private async addAll(typeId: string, points: ShopPoint[]): Promise<void> {
    const valid = points.filter(isIndexable);
    for (let i = 0; i < valid.length; i += BATCH) {
      const args = valid.slice(i, i + BATCH).flatMap((point) => [point.x, point.y, point.id]);
      await this.redis.geoadd(geoKey(typeId), ...args);
    }
  }

  private async members(typeId: string): Promise<string[]> {
    const members: string[] = [];
    let cursor = '0';
    do {
      const [next, page] = await this.redis.zscan(geoKey(typeId), cursor, 'COUNT', 1000);
      for (let i = 0; i < page.length; i += 2) members.push(page[i]!);
      cursor = next;
    } while (cursor !== '0');
    return members;
  }
}
