import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdClockError, IdGenerator, IdSequenceExhaustedError, MAX_SEQUENCE, counterKey, decodeId, parseId, utcDayStamp } from '../../../src/lib/id/index.js';
import { stringifyResult } from '../../../src/http/result.js';
import { killFixtures, runFixture } from '../../../kit/children.js';
import { connectRedis, deleteKeys, uniquePrefix } from '../../support/redis.js';

const keyPrefix = uniquePrefix('id');
let redis: Redis;

beforeAll(() => {
  redis = connectRedis(keyPrefix);
});

afterAll(async () => {
  killFixtures();
  await deleteKeys(keyPrefix);
  redis.disconnect();
});

/** A clock the test moves by hand. */
function manualClock(iso: string): { now: () => number; set: (iso: string) => void } {
  let current = Date.parse(iso);
  return { now: () => current, set: (next) => (current = Date.parse(next)) };
}

describe('IdGenerator', () => {
  it('issues 200,000 distinct IDs from 4 concurrent processes', async () => {
    const started = Date.now();
    const children = Array.from({ length: 4 }, () => runFixture(new URL('./fixtures/issue-ids.ts', import.meta.url), [keyPrefix, 'multi', '50000', '200']));
    await Promise.all(children.map((child) => child.exited));
    const finished = Date.now();

    const ids = children.flatMap((child) => child.output().trim().split('\n'));
    expect(ids).toHaveLength(200_000);
    expect(new Set(ids).size).toBe(200_000);
    const times = ids.map((text) => decodeId(BigInt(text)).timestamp.getTime());
    expect(times.reduce((a, b) => Math.min(a, b))).toBeGreaterThanOrEqual(Math.floor(started / 1000) * 1000);
    expect(times.reduce((a, b) => Math.max(a, b))).toBeLessThanOrEqual(finished);
    // The day counters read as the number of IDs issued (two days if the run crossed 00:00 UTC).
    const generator = new IdGenerator(redis);
    const days = new Set([utcDayStamp(new Date(started)), utcDayStamp(new Date(finished))]);
    let counted = 0;
    for (const day of days) counted += await generator.dailyCount('multi', new Date(`${day.slice(0, 4)}-${day.slice(4, 6)}-${day.slice(6)}`));
    expect(counted).toBe(200_000);
  });

  it('encodes the issue second and the day sequence, and decodes them back', async () => {
    const generator = new IdGenerator(redis);
    const before = Math.floor(Date.now() / 1000) * 1000;
    const first = await generator.nextId('decode');
    const second = await generator.nextId('decode');
    const after = Date.now();

    expect(first >> 63n).toBe(0n); // sign bit
    const decoded = generator.decode(first);
    expect(decoded.timestamp.getTime()).toBeGreaterThanOrEqual(before);
    expect(decoded.timestamp.getTime()).toBeLessThanOrEqual(after);
    expect(decoded.sequence).toBe(1);
    expect(decodeId(second).sequence).toBe(2);
    expect(second).toBeGreaterThan(first);
  });

  it('keeps the daily counter (no TTL) so that it reads as the day count', async () => {
    const clock = manualClock('2024-03-15T10:00:00Z');
    const generator = new IdGenerator(redis, { clock: clock.now });
    for (let i = 0; i < 5; i++) await generator.nextId('count');

    const key = counterKey('count', '20240315');
    expect(await redis.ttl(key)).toBe(-1);
    expect(await redis.get(key)).toBe('5');
    expect(await generator.dailyCount('count', new Date('2024-03-15T23:59:59Z'))).toBe(5);
    expect(await generator.dailyCount('count', new Date('2024-03-16T00:00:00Z'))).toBe(0);
  });

  it('increases with time, also across a UTC day boundary where the sequence restarts', async () => {
    const clock = manualClock('2024-03-15T23:59:59Z');
    const generator = new IdGenerator(redis, { clock: clock.now });
    const lastOfDay = [await generator.nextId('boundary'), await generator.nextId('boundary')];
    clock.set('2024-03-16T00:00:00Z');
    const firstOfNextDay = await generator.nextId('boundary');

    expect(decodeId(firstOfNextDay).sequence).toBe(1);
    expect(firstOfNextDay).toBeGreaterThan(lastOfDay[1]!);
    expect(lastOfDay[1]!).toBeGreaterThan(lastOfDay[0]!);
  });

  it('refuses to issue past the 32-bit daily sequence instead of wrapping', async () => {
    const clock = manualClock('2024-05-01T08:00:00Z');
    const generator = new IdGenerator(redis, { clock: clock.now });
    const key = counterKey('overflow', '20240501');
    await redis.set(key, MAX_SEQUENCE - 1);

    const last = await generator.nextId('overflow');
    expect(decodeId(last).sequence).toBe(MAX_SEQUENCE);
    expect(decodeId(last).timestamp.toISOString()).toBe('2024-05-01T08:00:00.000Z');
    await expect(generator.nextId('overflow')).rejects.toBeInstanceOf(IdSequenceExhaustedError);
    expect(await redis.get(key)).toBe(String(MAX_SEQUENCE)); // still the exact count

    clock.set('2024-05-02T00:00:00Z'); // a new day has a new sequence
    expect(decodeId(await generator.nextId('overflow')).sequence).toBe(1);
  });

  describe('with blocks (blockSize > 1)', () => {
    it('issues distinct, per-generator increasing IDs from shared blocks, one round trip per block', async () => {
      const a = new IdGenerator(redis, { blockSize: 7 });
      const b = new IdGenerator(redis, { blockSize: 7 });
      // Many calls in flight at once on each generator: waiters share a block being reserved.
      const [fromA, fromB] = await Promise.all([a, b].map((g) => Promise.all(Array.from({ length: 500 }, () => g.nextId('blocks')))));

      expect(new Set([...fromA!, ...fromB!]).size).toBe(1000);
      for (const ids of [fromA!, fromB!]) {
        for (let i = 1; i < ids.length; i++) expect(ids[i]!).toBeGreaterThan(ids[i - 1]!);
      }
      // Whole blocks were reserved: at most one partly used block per generator.
      const reserved = Number(await redis.get(counterKey('blocks', utcDayStamp(new Date()))));
      expect(reserved % 7).toBe(0);
      expect(reserved).toBeGreaterThanOrEqual(1000);
      expect(reserved).toBeLessThan(1000 + 2 * 7);
    });

    it('drops the rest of a block at the end of its UTC day and starts the new day at 1', async () => {
      const clock = manualClock('2024-07-01T23:59:59Z');
      const generator = new IdGenerator(redis, { clock: clock.now, blockSize: 100 });
      const lastOfDay = await generator.nextId('block-day');
      clock.set('2024-07-02T00:00:00Z');
      const firstOfNextDay = await generator.nextId('block-day');

      expect(decodeId(lastOfDay).sequence).toBe(1);
      expect(decodeId(firstOfNextDay)).toEqual({ timestamp: new Date('2024-07-02T00:00:00Z'), sequence: 1 });
      expect(await redis.get(counterKey('block-day', '20240701'))).toBe('100');
    });

    it('takes the last numbers of a day in a short block, then refuses', async () => {
      const clock = manualClock('2024-08-01T08:00:00Z');
      const generator = new IdGenerator(redis, { clock: clock.now, blockSize: 10 });
      await redis.set(counterKey('block-end', '20240801'), MAX_SEQUENCE - 3);
      const last = await Promise.all([1, 2, 3].map(() => generator.nextId('block-end')));
      expect(last.map((id) => decodeId(id).sequence)).toEqual([MAX_SEQUENCE - 2, MAX_SEQUENCE - 1, MAX_SEQUENCE]);
      await expect(generator.nextId('block-end')).rejects.toBeInstanceOf(IdSequenceExhaustedError);
    });

    it('rejects a block size outside 1 to 1,000,000', () => {
      expect(() => new IdGenerator(redis, { blockSize: 0 })).toThrow(RangeError);
      expect(() => new IdGenerator(redis, { blockSize: 1.5 })).toThrow(RangeError);
    });
  });

  it('never issues a smaller time part when the clock moves backwards, even across midnight', async () => {
    const clock = manualClock('2024-06-02T00:00:05Z');
    const generator = new IdGenerator(redis, { clock: clock.now });
    const beforeJump = await generator.nextId('backwards');
    clock.set('2024-06-01T23:59:58Z'); // NTP stepped the clock back 7 s, into the previous day
    const afterJump = await generator.nextId('backwards');

    expect(afterJump).toBeGreaterThan(beforeJump);
    expect(decodeId(afterJump).timestamp.toISOString()).toBe('2024-06-02T00:00:05.000Z');
    // The kept time part still names the day whose counter gave the sequence.
    expect(await redis.get(counterKey('backwards', '20240602'))).toBe('2');
    expect(await redis.exists(counterKey('backwards', '20240601'))).toBe(0);

    // Another process whose clock is behind uses the earlier day's counter: still unique.
    const lagging = new IdGenerator(redis, { clock: () => Date.parse('2024-06-01T23:59:58Z') });
    const fromLagging = await lagging.nextId('backwards');
    expect([beforeJump, afterJump]).not.toContain(fromLagging);
  });

  it('rejects clocks outside the 31-bit time range and bad input', async () => {
    const early = new IdGenerator(redis, { clock: () => Date.parse('2023-12-31T23:59:59Z') });
    await expect(early.nextId('x')).rejects.toBeInstanceOf(IdClockError);
    const late = new IdGenerator(redis, { clock: () => Date.parse('2092-01-20T00:00:00Z') });
    await expect(late.nextId('x')).rejects.toBeInstanceOf(IdClockError);
    await expect(new IdGenerator(redis).nextId('')).rejects.toBeInstanceOf(TypeError);
    expect(() => new IdGenerator(redis, { epoch: new Date('2024-01-01T00:00:00.500Z') })).toThrow(RangeError);
  });

  it('travels through JSON as a decimal string and parses back exactly', async () => {
    const id = await new IdGenerator(redis).nextId('json');
    expect(id).toBeGreaterThan(2n ** 53n); // a JSON number would lose digits
    const json = stringifyResult({ success: true, data: { orderId: id } });
    expect(json).toBe(`{"success":true,"data":{"orderId":"${id}"}}`);
    const parsed = JSON.parse(json) as { data: { orderId: string } };
    expect(parseId(parsed.data.orderId)).toBe(id);
  });
});
