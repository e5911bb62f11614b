import type { RedisClient } from '../../infra/redis.js';
import { calendarDay, dayStamp, type CalendarDay } from '../../lib/calendar/index.js';

/** HyperLogLog of the site's visitors on one Asia/Shanghai day (yyyyMMdd). */
export const siteUvKey = (day: string): string => `uv:site:${day}`;
/** HyperLogLog of one shop page's visitors on one day. */
export const shopUvKey = (shopId: string, day: string): string => `uv:shop:${shopId}:${day}`;

/** Daily counts are kept this long, then expire (renewed by each visit of the day). */
export const UV_TTL_SECONDS = 400 * 24 * 3600;

/**
 * Unique visitors per day (hmdp "UV统计") on HyperLogLogs: at most ~12 KB per key whatever the
 * traffic, standard error 0.81 %. A visitor is `u:<userId>` when logged in, else `ip:<address>`.
 */
export class UvService {
  constructor(
    private readonly redis: RedisClient,
    private readonly now: () => number = Date.now,
  ) {}

  /** Records a visit of the site and, for a shop page, of the shop. Single-key commands only. */
  async record(visitor: string, shopId?: string): Promise<void> {
    const day = dayStamp(calendarDay(this.now()));
    const keys = [siteUvKey(day), ...(shopId !== undefined ? [shopUvKey(shopId, day)] : [])];
    await Promise.all(
      keys.map(async (key) => {
        // PFADD answers 1 when the estimate changed; the TTL only needs setting once per day,
        // but EXPIRE is cheap and keeps the key alive if it was created without one.
        if ((await this.redis.pfadd(key, visitor)) === 1) await this.redis.expire(key, UV_TTL_SECONDS);
      }),
    );
  }

  /** Estimated unique visitors of the site (or of one shop) on `day` (default today). */
  async count(day: CalendarDay | undefined, shopId?: string): Promise<{ date: string; shopId?: string; uv: number }> {
    const stamp = dayStamp(day ?? calendarDay(this.now()));
    const key = shopId !== undefined ? shopUvKey(shopId, stamp) : siteUvKey(stamp);
    const uv = await this.redis.pfcount(key);
    const date = `${stamp.slice(0, 4)}-${stamp.slice(4, 6)}-${stamp.slice(6, 8)}`;
    return shopId !== undefined ? { date, shopId, uv } : { date, uv };
  }
}
