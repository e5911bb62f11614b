import { invalid } from '../../lib/refusals/index.js';
import type { RedisClient } from '../../infra/redis.js';
import { calendarDay, daysInMonth, monthStamp, previousMonth } from '../../lib/calendar/index.js';
import { signKey } from './keys.js';
import { SOCIAL_MESSAGES } from './messages.js';

/** A streak is followed back at most this many months (10 years): a bound on round trips. */
const MAX_STREAK_MONTHS = 120;

export interface SignMonth {
  /** yyyyMM */
  month: string;
  daysInMonth: number;
  /** Days of the month signed in, ascending. */
  signedDays: number[];
  /** Today's day of the month when this is the current month, else null. */
  today: number | null;
}

/** Daily sign-in (hmdp "用户签到") on per-user, per-month bitmaps. */
export class SignService {
  constructor(
    private readonly redis: RedisClient,
    private readonly now: () => number = Date.now,
  ) {}

  /** Sets today's bit; `alreadySigned` when it was set before (signing twice is harmless). */
  async sign(userId: string): Promise<{ alreadySigned: boolean }> {
    const today = calendarDay(this.now());
    const previous = await this.redis.setbit(signKey(today.year, today.month, userId), today.day - 1, 1);
    return { alreadySigned: previous === 1 };
  }

  /**
   * Consecutive days signed ending today (0 if today is not signed yet). BITFIELD GET u{day} 0
   * reads days 1..today as one number whose lowest bit is today; trailing ones are the streak.
   * A streak reaching day 1 continues in the previous month's bitmap, and so on.
   */
  async streak(userId: string): Promise<number> {
    const today = calendarDay(this.now());
    let { year, month } = today;
    let days = today.day;
    let streak = 0;
    for (let i = 0; i < MAX_STREAK_MONTHS; i += 1) {
      const bits = await this.readBits(signKey(year, month, userId), days);
      const run = trailingOnes(bits, days);
      streak += run;
      if (run < days) break;
      ({ year, month } = previousMonth(year, month));
      days = daysInMonth(year, month);
    }
    return streak;
  }

  /** The days of a month (yyyyMM, default the current one) the user signed in: the UI's calendar. */
  async month(userId: string, stamp?: string): Promise<SignMonth> {
    const today = calendarDay(this.now());
    let { year, month } = today;
    if (stamp !== undefined) {
      year = Number(stamp.slice(0, 4));
      month = Number(stamp.slice(4, 6));
      if (month < 1 || month > 12) throw invalid(SOCIAL_MESSAGES.badMonth());
    }
    const days = daysInMonth(year, month);
    const bits = await this.readBits(signKey(year, month, userId), days);
    const signedDays: number[] = [];
    for (let day = 1; day <= days; day += 1) {
      if (Math.floor(bits / 2 ** (days - day)) % 2 === 1) signedDays.push(day);
    }
    const isCurrent = year === today.year && month === today.month;
    return { month: monthStamp(year, month), daysInMonth: days, signedDays, today: isCurrent ? today.day : null };
  }

  /** The first `count` bits (≤ 31) of the bitmap as an unsigned number; 0 when the key is missing. */
  private async readBits(key: string, count: number): Promise<number> {
    const [value] = (await this.redis.bitfield(key, 'GET', `u${count}`, 0)) as Array<number | null>;
    return value ?? 0;
  }
}

function trailingOnes(value: number, width: number): number {
  let run = 0;
  while (run < width && value % 2 === 1) {
    run += 1;
    value = Math.floor(value / 2);
  }
  return run;
}
