import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BloomFilter, bloomParameters } from '../../../../src/lib/cache/index.js';
import { LockClient } from '../../../../src/lib/lock/index.js';
import { connectRedis, deleteKeys, uniquePrefix } from '../../../support/redis.js';

const prefix = uniquePrefix('bloom');
const redis = connectRedis(prefix);
const locks = new LockClient(redis);
let n = 0;

const filter = (expectedItems = 1000, falsePositiveRate = 0.01) => new BloomFilter(redis, { name: `f${++n}`, expectedItems, falsePositiveRate, locks });

/** Ids in batches, as a repository's keyset pages would give them. */
const batches = (ids: string[], size = 250) =>
  async function* () {
    for (let i = 0; i < ids.length; i += size) yield ids.slice(i, i + size);
  };

const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => String(from + i));

beforeAll(async () => {
  await redis.ping();
});

afterAll(async () => {
  await locks.close();
  redis.disconnect();
  await deleteKeys(prefix);
});

describe('BloomFilter', () => {
  it('sizes m and k from n and p (m = -n ln p / ln²2, k = m/n ln 2)', () => {
    expect(bloomParameters(1000, 0.01)).toEqual({ bits: 9586, hashes: 7 });
    expect(bloomParameters(1_000_000, 0.001)).toEqual({ bits: 14_377_588, hashes: 10 });
    expect(() => bloomParameters(0, 0.01)).toThrow(RangeError);
    expect(() => bloomParameters(10, 1)).toThrow(RangeError);
    expect(() => bloomParameters(10 ** 9, 1e-9)).toThrow(/more than a Redis string holds/);
  });

  it('gives k distinct-looking offsets per id, all inside the bitmap past the header', () => {
    const bloom = filter();
    const offsets = bloom.offsets('42');
    expect(offsets).toHaveLength(bloom.hashes);
    expect(new Set(offsets).size).toBe(bloom.hashes);
    for (const offset of offsets) {
      expect(offset).toBeGreaterThanOrEqual(128);
      expect(offset).toBeLessThan(128 + bloom.bits);
    }
    expect(bloom.offsets('42')).toEqual(offsets);
  });

  it('never rejects an id it was built with, and rejects unknown ids at about the configured rate', async () => {
    const bloom = filter(2000, 0.01);
    const known = range(1, 2000);
    expect(await bloom.rebuild(batches(known))).toBe(2000);
    const answers = await Promise.all(known.map((id) => bloom.check(id)));
    expect(answers.every((answer) => answer === 'maybe')).toBe(true);

    const unknown = range(10_000_000, 5000);
    const falsePositives = (await Promise.all(unknown.map((id) => bloom.mightContain(id)))).filter(Boolean).length;
    expect(falsePositives / unknown.length).toBeLessThan(0.025); // p = 1 %, with room for chance
  });

  it('answers not-built (never "absent") while no filter exists, and add() does not create one', async () => {
    const bloom = filter();
    expect(await bloom.check('1')).toBe('not-built');
    expect(await bloom.mightContain('1')).toBe(true);
    await bloom.add('1');
    expect(await redis.exists(bloom.liveKey)).toBe(0); // one id in a fresh bitmap would reject all others
    expect(await bloom.isBuilt()).toBe(false);
  });

  it('ignores a filter built with other parameters until it is rebuilt (ensureBuilt)', async () => {
    const small = filter(100, 0.05);
    await small.rebuild(batches(range(1, 50)));
    const resized = new BloomFilter(redis, { name: small.name, expectedItems: 10_000, falsePositiveRate: 0.01, locks });
    expect(await resized.check('999999')).toBe('not-built');
    expect(await resized.ensureBuilt(batches(range(1, 50)))).toBe(50);
    expect(await resized.ensureBuilt(batches(range(1, 50)))).toBeNull(); // already there
    expect(await resized.check('1')).toBe('maybe');
    expect(await small.check('1')).toBe('not-built');
  });

  it('rebuilds aside and swaps: the live filter answers throughout, ids added meanwhile survive, no TTL after', async () => {
    const bloom = filter(5000, 0.01);
    await bloom.rebuild(batches(range(1, 1000)));

    let inRebuild: () => void = () => {};
    const reachedMiddle = new Promise<void>((resolve) => (inRebuild = resolve));
    let resume: () => void = () => {};
    const paused = new Promise<void>((resolve) => (resume = resolve));
    const rebuilding = bloom.rebuild(async function* () {
      yield range(1, 500);
      inRebuild();
      await paused; // the table read is half done
      yield range(501, 500);
    });
    await reachedMiddle;
    expect(await redis.exists(bloom.buildingKey)).toBe(1);
    expect(await redis.pttl(bloom.buildingKey)).toBeGreaterThan(0);
    // The live filter still knows everything while the new one is half built.
    const during = await Promise.all(range(1, 1000).map((id) => bloom.check(id)));
    expect(during.every((answer) => answer === 'maybe')).toBe(true);
    // A shop created now (after the rebuild's read passed its id range) must not be lost by the swap.
    await bloom.add('777777');
    resume();
    expect(await rebuilding).toBe(1000);

    expect(await redis.exists(bloom.buildingKey)).toBe(0);
    expect(await redis.pttl(bloom.liveKey)).toBe(-1);
    expect(await bloom.check('777777')).toBe('maybe');
    const after = await Promise.all(range(1, 1000).map((id) => bloom.check(id)));
    expect(after.every((answer) => answer === 'maybe')).toBe(true);
  });

  it('runs one rebuild at a time across clients', async () => {
    const bloom = filter();
    const otherRedis = connectRedis(prefix);
    const otherLocks = new LockClient(otherRedis);
    try {
      const other = new BloomFilter(otherRedis, { name: bloom.name, expectedItems: 1000, falsePositiveRate: 0.01, locks: otherLocks });
      let running = 0;
      let maxRunning = 0;
      const source = (ids: string[]) =>
        async function* () {
          running += 1;
          maxRunning = Math.max(maxRunning, running);
          await sleep(100);
          yield ids;
          running -= 1;
        };
      await Promise.all([bloom.rebuild(source(range(1, 10))), other.rebuild(source(range(1, 10)))]);
      expect(maxRunning).toBe(1);
      expect(await bloom.check('5')).toBe('maybe');
    } finally {
      await otherLocks.close();
      otherRedis.disconnect();
    }
  });
});
