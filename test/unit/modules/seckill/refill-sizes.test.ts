import { describe, expect, it } from 'vitest';
import { REFILL_FIRST_UNITS, REFILL_MOST_UNITS, RefillSizes } from '../../../../src/modules/seckill/sale/transfers.js';

describe('RefillSizes: how many units a bucket refill may move', () => {
  it('doubles for a bucket refilled again within a second, up to the most, and starts over after a pause', () => {
    let now = 1_000_000;
    const sizes = new RefillSizes(() => now);
    const streak = Array.from({ length: 9 }, () => {
      now += 100;
      return sizes.next('v:0:3');
    });
    expect(streak).toEqual([64, 128, 256, 512, 1024, 2048, 4096, 4096, 4096]);
    expect(streak[0]).toBe(REFILL_FIRST_UNITS);
    expect(Math.max(...streak)).toBe(REFILL_MOST_UNITS);
    now += 1_000; // a second without a refill of that bucket
    expect(sizes.next('v:0:3')).toBe(REFILL_FIRST_UNITS);
  });

  it('keeps each bucket to its own streak', () => {
    let now = 0;
    const sizes = new RefillSizes(() => now);
    expect([sizes.next('v:0:3'), sizes.next('v:0:3'), sizes.next('v:1:3'), sizes.next('w:0:3')]).toEqual([64, 128, 64, 64]);
    now += 10;
    expect(sizes.next('v:1:3')).toBe(128);
  });
});
