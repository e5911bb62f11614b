import { describe, expect, it } from 'vitest';
import { SaleKeys, shardTag } from '../../../../src/modules/seckill/keys.js';

/**
 * The part of a key Redis Cluster hashes to pick the slot: the text between the first `{` and
 * the next `}` when that is not empty, else the whole key. Keys with one hash tag share a slot.
 */
function hashedPart(key: string): string {
  const open = key.indexOf('{');
  if (open === -1) return key;
  const close = key.indexOf('}', open + 1);
  return close === -1 || close === open + 1 ? key : key.slice(open + 1, close);
}

describe('SaleKeys', () => {
  const keys = new SaleKeys(4);

  it("gives every key of one voucher, and its shard's stream, one {seckill:N} hash tag: one cluster slot", () => {
    const voucher = keys.voucher('10');
    const all = [
      voucher.voucher,
      voucher.buyers,
      voucher.stream,
      voucher.deadLetters,
      voucher.queued,
      voucher.queuedByUser,
      keys.releaseMarker({ orderId: '77', voucherId: '10' }),
      keys.idempotentOrder('10', '42', 'k{1}'),
    ];
    expect(voucher.tag).toBe('{seckill:2}'); // 10 mod 4
    expect(new Set(all.map(hashedPart))).toEqual(new Set(['seckill:2']));
    expect(new Set(all).size).toBe(all.length);
    // The voucher id in a key is plain text, never a second hash tag.
    expect(voucher.voucher).toBe('{seckill:2}:voucher:10');
    expect(voucher.buyers).toBe('{seckill:2}:buyer-slots:10');
    // A user's Idempotency-Key binding is per user, on the user's own slot, whatever the key holds.
    expect(hashedPart(keys.idempotencyBinding('42', '{x}'))).toBe('42');
  });

  it('puts a voucher on the same shard whether its id fits a safe integer or needs BigInt; an id not of digits throws', () => {
    const seven = new SaleKeys(7);
    for (const id of ['1', '6', '7', '0042', '123456789012345', '1234567890123456', '9223372036854775807']) {
      expect(seven.shardOf(id), id).toBe(Number(BigInt(id) % 7n));
    }
    expect(() => seven.voucher('abc')).toThrow(SyntaxError);
    expect(keys.shard(2)).toBe(keys.shard(2)); // built once
  });

  it('puts vouchers of one shard on the same stream and different shards on different slots', () => {
    expect(keys.voucher('3').stream).toBe(keys.voucher('7').stream);
    const tags = new SaleKeys(4, true).allShards().map((shard) => hashedPart(new SaleKeys(4, true).shard(shard).stream));
    // The shards, then the bucket lanes (seckill-buckets.md), which every loop over the streams reads too.
    expect(tags.slice(0, 4)).toEqual(['seckill:0', 'seckill:1', 'seckill:2', 'seckill:3']);
    expect(tags.slice(4).map((tag) => tag.replace(/\.\d+$/, ''))).toEqual(Array.from({ length: 8 }, (_, lane) => `seckill:lane${lane}`));
    expect(new SaleKeys(4).allShards()).toEqual([0, 1, 2, 3]); // buckets off (the default): the shards alone
  });

  it('spreads consecutive voucher ids evenly over the shards', () => {
    const counts = new Map<number, number>();
    for (let id = 1; id <= 1_000; id += 1) {
      const shard = keys.shardOf(String(id));
      counts.set(shard, (counts.get(shard) ?? 0) + 1);
    }
    expect([...counts.entries()].sort(([a], [b]) => a - b)).toEqual([
      [0, 250],
      [1, 250],
      [2, 250],
      [3, 250],
    ]);
  });

  it('computes the shard of a 64-bit id exactly (a JavaScript number would round it)', () => {
    // 2^63 - 1 = 9223372036854775807: mod 10 is 7, but Number(...) % 10 gives 8 (it rounds up to 2^63).
    expect(new SaleKeys(10).shardOf('9223372036854775807')).toBe(7);
    expect(new SaleKeys(3).shardOf('9007199254740993')).toBe(Number(9007199254740993n % 3n));
  });

  it("puts an order's release marker on its voucher's shard, one marker per order", () => {
    const marker = keys.releaseMarker({ orderId: '123456789012345678', voucherId: '6' });
    expect(marker).toBe(`${shardTag(2)}:released:123456789012345678`);
    expect(keys.releaseMarker({ orderId: '1', voucherId: '6' })).not.toBe(keys.releaseMarker({ orderId: '2', voucherId: '6' }));
  });

  it('has one shard when configured with one: every voucher on {seckill:0}', () => {
    const single = new SaleKeys(1, false);
    expect(single.allShards()).toEqual([0]);
    expect(['1', '2', '99999'].map((id) => single.voucher(id).tag)).toEqual(['{seckill:0}', '{seckill:0}', '{seckill:0}']);
  });
});
