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
