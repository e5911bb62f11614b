/**
 * Calendar days in a fixed-offset time zone (no DST), e.g. Asia/Shanghai = UTC+8: where "today"
 * starts for daily keys (sign-in bitmaps, unique visitors).
 */
export interface CalendarDay {
  year: number;
  /** 1-12 */
  month: number;
  /** 1-31 */
  day: number;
}

/** Asia/Shanghai has had no daylight saving time since 1991: a fixed +8 h. */
export const SHANGHAI_OFFSET_MINUTES = 8 * 60;

export function calendarDay(epochMs: number, offsetMinutes = SHANGHAI_OFFSET_MINUTES): CalendarDay {
  const shifted = new Date(epochMs + offsetMinutes * 60_000);
  return { year: shifted.getUTCFullYear(), month: shifted.getUTCMonth() + 1, day: shifted.getUTCDate() };
}

export function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

export function previousMonth(year: number, month: number): { year: number; month: number } {
  return month === 1 ? { year: year - 1, month: 12 } : { year, month: month - 1 };
}

const pad = (value: number, width = 2): string => String(value).padStart(width, '0');

/** yyyyMM */
export const monthStamp = (year: number, month: number): string => `${pad(year, 4)}${pad(month)}`;
/** yyyyMMdd */
export const dayStamp = (day: CalendarDay): string => `${pad(day.year, 4)}${pad(day.month)}${pad(day.day)}`;

/** Parses yyyy-MM-dd (or yyyyMMdd) into a real calendar day, or null. */
export function parseDay(text: string): CalendarDay | null {
  const match = /^(\d{4})-?(\d{2})-?(\d{2})$/.exec(text);
  if (!match) return null;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  return { year, month, day };
}
