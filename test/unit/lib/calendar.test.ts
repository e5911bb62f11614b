import { describe, expect, it } from 'vitest';
import { calendarDay, dayStamp, daysInMonth, monthStamp, parseDay, previousMonth } from '../../../src/lib/calendar/index.js';

describe('calendarDay: the day in Shanghai (UTC+8) by default', () => {
  it('starts the day at 16:00 UTC of the day before', () => {
    expect(calendarDay(Date.parse('2024-03-15T15:59:59.999Z'))).toEqual({ year: 2024, month: 3, day: 15 });
    expect(calendarDay(Date.parse('2024-03-15T16:00:00Z'))).toEqual({ year: 2024, month: 3, day: 16 });
  });

  it('crosses months and years like the local calendar, and takes another offset', () => {
    expect(calendarDay(Date.parse('2023-12-31T16:00:00Z'))).toEqual({ year: 2024, month: 1, day: 1 });
    expect(calendarDay(Date.parse('2024-02-29T20:00:00Z'))).toEqual({ year: 2024, month: 3, day: 1 });
    expect(calendarDay(Date.parse('2024-01-01T02:00:00Z'), -5 * 60)).toEqual({ year: 2023, month: 12, day: 31 });
    expect(calendarDay(Date.parse('2024-01-01T02:00:00Z'), 0)).toEqual({ year: 2024, month: 1, day: 1 });
  });
});

describe('months', () => {
  it('counts the days of a month, leap years included', () => {
    expect([2024, 2023, 2000, 1900].map((year) => daysInMonth(year, 2))).toEqual([29, 28, 29, 28]);
    expect([1, 4, 12].map((month) => daysInMonth(2024, month))).toEqual([31, 30, 31]);
  });

  it('goes back a month, across the year', () => {
    expect(previousMonth(2024, 3)).toEqual({ year: 2024, month: 2 });
    expect(previousMonth(2024, 1)).toEqual({ year: 2023, month: 12 });
  });
});

describe('stamps in keys', () => {
  it('writes yyyyMM and yyyyMMdd with zeros', () => {
    expect(monthStamp(2024, 3)).toBe('202403');
    expect(dayStamp({ year: 2024, month: 3, day: 5 })).toBe('20240305');
    expect(dayStamp({ year: 999, month: 12, day: 31 })).toBe('09991231');
  });

  it('parses yyyy-MM-dd and yyyyMMdd back, only as real days', () => {
    expect(parseDay('2024-02-29')).toEqual({ year: 2024, month: 2, day: 29 });
    expect(parseDay('20240305')).toEqual({ year: 2024, month: 3, day: 5 });
    expect(parseDay(dayStamp({ year: 2025, month: 12, day: 31 }))).toEqual({ year: 2025, month: 12, day: 31 });
    for (const bad of ['2023-02-29', '2024-13-01', '2024-00-10', '2024-04-31', '2024-1-1', '2024/01/01', '', ' 2024-01-01']) {
      expect(parseDay(bad), bad).toBeNull();
    }
  });
});
