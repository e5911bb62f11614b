import { describe, expect, it } from 'vitest';
import { NULL_MARKER, decode, encodeValue, fingerprint, newTombstone } from '../../../../src/lib/cache/codec.js';

describe('cache entries as strings', () => {
  it('round-trips a value, with and without a logical expiry', () => {
    const shop = { id: '1', name: '103茶餐厅', score: 4.7, tags: ['茶'] };
    expect(decode(encodeValue(shop))).toEqual({ kind: 'value', data: shop });
    expect(decode(encodeValue(shop, 1_700_000_000_000))).toEqual({ kind: 'value', data: shop, expireAt: 1_700_000_000_000 });
    expect(decode(encodeValue(null))).toEqual({ kind: 'value', data: null }); // a cached null value is not the null marker
    expect(decode(encodeValue([]))).toEqual({ kind: 'value', data: [] });
  });

  it('tells the null marker (a known absent row) from a miss', () => {
    expect(decode(NULL_MARKER)).toEqual({ kind: 'null' });
    expect(decode(null)).toEqual({ kind: 'absent' });
  });

  it('reads a tombstone, foreign or corrupt text as a miss', () => {
    expect(decode(newTombstone())).toEqual({ kind: 'absent' });
    for (const raw of ['{"data":', 'not json', 'null', '42', '"text"', '{"value":1}']) expect(decode(raw), raw).toEqual({ kind: 'absent' });
  });

  it('ignores an expireAt that is not a number', () => {
    expect(decode('{"data":1,"expireAt":"soon"}')).toEqual({ kind: 'value', data: 1 });
  });

  it('refuses values JSON cannot hold instead of caching garbage', () => {
    expect(() => encodeValue(undefined)).toThrow(TypeError);
    expect(() => encodeValue(() => 1)).toThrow(TypeError);
    expect(() => encodeValue(1n)).toThrow(TypeError); // JSON.stringify throws on a bigint
  });

  it('makes a new tombstone each time', () => {
    const tombstones = new Set(Array.from({ length: 100 }, newTombstone));
    expect(tombstones.size).toBe(100);
  });

  it('fingerprints what a rebuild saw: SHA-1 of the text, empty for no key', () => {
    expect(fingerprint('abc')).toBe('a9993e364706816aba3e25717850c26c9cd0d89d');
    expect(fingerprint(null)).toBe('');
    expect(fingerprint('')).not.toBe(fingerprint(null)); // the null marker is a key
  });
});
