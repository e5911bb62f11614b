import { describe, expect, it } from 'vitest';
import { DEFAULT_ID_EPOCH, MAX_SEQUENCE, counterKey, decodeId, parseId, utcDayStamp } from '../../../src/lib/id/index.js';

/** The layout of an id: 0 | 31 bits of seconds since the epoch | 32 bits of sequence. */
const compose = (seconds: number, sequence: number): bigint => (BigInt(seconds) << 32n) | BigInt(sequence);

describe('decodeId', () => {
  it('splits an id into its second and its sequence number', () => {
    expect(decodeId(compose(5, 7))).toEqual({ timestamp: new Date(DEFAULT_ID_EPOCH.getTime() + 5_000), sequence: 7 });
    expect(decodeId(compose(2 ** 31 - 1, MAX_SEQUENCE))).toEqual({
      timestamp: new Date(DEFAULT_ID_EPOCH.getTime() + (2 ** 31 - 1) * 1000),
      sequence: MAX_SEQUENCE,
    });
    expect(decodeId(compose(60, 1), new Date('2030-01-01T00:00:00Z')).timestamp.toISOString()).toBe('2030-01-01T00:01:00.000Z');
  });

  it('orders ids by second first, then by sequence', () => {
    expect(compose(6, 1)).toBeGreaterThan(compose(5, MAX_SEQUENCE));
  });

  it('refuses what cannot be an id: negative, or over 63 bits', () => {
    expect(() => decodeId(-1n)).toThrow(RangeError);
    expect(() => decodeId(2n ** 63n)).toThrow(RangeError);
  });
});

describe('parseId', () => {
  it('parses decimal strings exactly, beyond 2^53', () => {
    expect(parseId('0')).toBe(0n);
    expect(parseId('9007199254740993')).toBe(9007199254740993n);
    expect(parseId('9223372036854775807')).toBe(2n ** 63n - 1n);
  });

  it.each(['', '-1', '01', '1.5', '1e3', '0x10', ' 1', '1 ', 'abc', '9223372036854775808', '12345678901234567890'])('refuses %j', (bad) => {
    expect(() => parseId(bad)).toThrow(RangeError);
  });
});

describe('daily counter keys', () => {
  it('name the UTC day, whatever the time zone the date was written in', () => {
    expect(utcDayStamp(new Date('2024-03-15T23:59:59.999Z'))).toBe('20240315');
    expect(utcDayStamp(new Date('2024-03-16T07:00:00+08:00'))).toBe('20240315');
    expect(counterKey('order', '20240315')).toBe('icr:order:20240315');
  });
});
