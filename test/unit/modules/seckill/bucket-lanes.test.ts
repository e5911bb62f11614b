import calculateSlot from 'cluster-key-slot';
import { describe, expect, it } from 'vitest';
import { BUCKET_LANES, MAX_BUCKETS, SaleKeys, homeBucket } from '../../../../src/modules/seckill/keys.js';
import { shareOf } from '../../../../src/modules/seckill/sale/transfers.js';

/** The slot ranges `redis-cli --cluster create` gives `masters` masters (redis-cli.c: cursor of 16384/masters, rounded). */
function defaultRanges(masters: number): Array<[number, number]> {
  const perNode = 16_384 / masters;
  const ranges: Array<[number, number]> = [];
  let first = 0;
  let cursor = 0;
  for (let i = 0; i < masters; i += 1) {
    let last = Math.round(cursor + perNode - 1);
    if (last > 16_384 || i === masters - 1) last = 16_383;
    ranges.push([first, last]);
    first = last + 1;
    cursor += perNode;
  }
  return ranges;
}

const hashTag = (key: string): string => /\{([^}]+)\}/.exec(key)![1]!;

describe('bucket lanes', () => {
  const keys = new SaleKeys(4, true);

  // Fixed lanes cannot be perfect for every (B, M): B = 6 on 7 masters uses 5 of them (B ≤ M otherwise holds).
  it("puts B buckets on B different masters of a default Cluster of M ≥ B masters (M ≤ 8; B = 6 on 7: 5), on all 3 of the kit's for B > 3", () => {
    for (let masters = 1; masters <= 8; masters += 1) {
      const ranges = defaultRanges(masters);
      const masterOf = (slot: number): number => ranges.findIndex(([first, last]) => slot >= first && slot <= last);
      for (let buckets = 1; buckets <= MAX_BUCKETS; buckets += 1) {
        const slots = Array.from({ length: buckets }, (_, index) => calculateSlot(keys.bucket('42', { index, of: buckets }).voucher));
        const used = new Set(slots.map(masterOf)).size;
        const expected = buckets === 6 && masters === 7 ? 5 : Math.min(buckets, masters);
        if (buckets <= masters || masters === 3) expect(used, `B = ${buckets} on ${masters} masters`).toBe(expected);
      }
    }
  });

  it("keeps each bucket's keys in its lane's one slot, named with b and B", () => {
    const bucket = keys.bucket('42', { index: 1, of: 3 });
    const tag = hashTag(bucket.stream);
    for (const key of [
      bucket.voucher,
      bucket.buyers,
      bucket.queued,
      bucket.queuedByUser,
      bucket.inFlight,
      keys.idempotentOrder('42', '7', 'k', { index: 1, of: 3 }),
    ]) {
      expect(hashTag(key)).toBe(tag);
    }
    expect(bucket.voucher).toMatch(/:voucher:42:b1of3$/);
    expect(keys.bucket('42', { index: 1, of: 2 }).voucher).not.toBe(bucket.voucher);
    expect(keys.allShards()).toHaveLength(4 + BUCKET_LANES);
  });

  it('sends a user to one home bucket, spread evenly over the buckets', () => {
    const counts = [0, 0, 0];
    for (let user = 1_000_000; user < 1_030_000; user += 1) counts[homeBucket(String(user), 3)]! += 1;
    for (const count of counts) expect(count).toBeGreaterThan(9_000);
    expect(homeBucket('123', 3)).toBe(homeBucket('123', 3));
    expect(homeBucket('123', 1)).toBe(0);
  });

  it('splits the stock over the buckets, the remainder to the first ones', () => {
    expect([0, 1, 2].map((index) => shareOf(10, { index, of: 3 }))).toEqual([4, 3, 3]);
    expect([0, 1, 2].map((index) => shareOf(2, { index, of: 3 }))).toEqual([1, 1, 0]);
  });
});
