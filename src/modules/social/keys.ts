import { monthStamp } from '../../lib/calendar/index.js';

/**
 * Every Redis key of blogs, follows, sign-in and unique visitors (hmdp's names):
 *
 *   blog:liked:{blogId}        zset, member = user id, score = time of the like (ms)
 *   feed:{userId}              zset inbox, member = blog id, score = publish time (ms), bounded length
 *   follows:{userId}           set of followee ids plus FOLLOWS_MARKER, rebuilt from tb_follow when missing
 *   sign:{yyyyMM}:{userId}     bitmap, bit d-1 = signed in on day d (Asia/Shanghai days)
 *   uv:site:{yyyyMMdd}         HyperLogLog of the day's visitors
 *   uv:shop:{shopId}:{yyyyMMdd}   HyperLogLog of a shop's visitors that day
 *   upload:sweep               string, the instance that claimed the current sweep of unattached images, TTL < the interval
 *
 * Rate-limit counters derived from WRITE_LIMIT_NAMES: `rl:{name}:{userId}` (src/lib/rate-limit).
 */

export const likedKey = (blogId: string): string => `blog:liked:${blogId}`;

export const feedKey = (userId: string): string => `feed:${userId}`;

/** hmdp's `follows:{userId}`: the ids a user follows. */
export const followsKey = (userId: string): string => `follows:${userId}`;

/**
 * Every built set holds this member besides the followees (no user has id 0), so "follows
 * nobody" is an existing set and a missing set always means "rebuild from tb_follow".
 */
export const FOLLOWS_MARKER = '0';

/**
 * hmdp's `sign:{yyyyMM}:{userId}`: one bit per day of the month, bit 0 = day 1.
 * Days are Asia/Shanghai calendar days (hmdp's users are in China; the day turns at 00:00 UTC+8).
 */
export const signKey = (year: number, month: number, userId: string): string => `sign:${monthStamp(year, month)}:${userId}`;

/** HyperLogLog of the site's visitors on one Asia/Shanghai day (yyyyMMdd). */
export const siteUvKey = (day: string): string => `uv:site:${day}`;

/** HyperLogLog of one shop page's visitors on one day. */
export const shopUvKey = (shopId: string, day: string): string => `uv:shop:${shopId}:${day}`;

/** Claimed (SET NX PX) by the instance that sweeps unattached images this interval. */
export const UPLOAD_SWEEP_KEY = 'upload:sweep';

/** Per-user write limits (social/write-limits.ts); the rate limiter keys them `rl:{name}:{userId}`. */
export const WRITE_LIMIT_NAMES = {
  blog: 'write:blog',
  like: 'write:like',
  follow: 'write:follow',
  uploadFiles: 'upload:files',
  uploadBytes: 'upload:bytes',
} as const;
