import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SALE_KEYS_KEPT_AFTER_END_MS, SaleKeys } from '../../../../src/modules/seckill/keys.js';
import { IDEMPOTENCY_TTL_MS } from '../../../../src/modules/seckill/keys.js';
import { saleOperations, toReserveOutcome, toReserveResult } from '../../../../src/modules/seckill/sale/sale-scripts.js';

/** reserve.lua's header: its KEYS lines and the sentence listing its return codes. */
const reserveLua = readFileSync(new URL('../../../../src/modules/seckill/sale/lua/reserve.lua', import.meta.url), 'utf8');
const header = reserveLua.slice(0, reserveLua.indexOf(']]'));

describe('reserve.lua as a typed function', () => {
  it('reads each return code the way reserve.lua documents it', () => {
    // "Returns {code, value}; codes 0 accepted, 1 not started, 2 ended, ..." to the end of the line.
    const documented = [...(/Returns [^\n]*/.exec(header)?.[0] ?? '').matchAll(/(\d+) ([a-z ]+?)(?:[,.]|$)/gm)].map(
      (match) => [Number(match[1]), match[2]!.trim().replaceAll(' ', '-')] as const,
    );
    expect(documented.length).toBeGreaterThanOrEqual(9);
    for (const [code, outcome] of documented) expect(toReserveOutcome(code), `code ${code}`).toBe(outcome);
  });

  it('refuses a code the script does not return instead of guessing', () => {
    // Far past the codes reserve.lua returns (0-7 today), so adding an outcome never breaks this.
    expect(() => toReserveOutcome(99)).toThrow('reserve.lua returned unexpected 99');
    expect(() => toReserveOutcome(-1)).toThrow(/unexpected -1/);
  });

  it('reads the values beside the code: the slot and acceptance time, the limit, the replayed order id', () => {
    expect(toReserveResult(0, 3, 1_700_000_000_123)).toEqual({ outcome: 'accepted', slot: 3, acceptedMs: 1_700_000_000_123 });
    expect(toReserveResult(4, 2, 1_700_000_000_123)).toEqual({ outcome: 'already-bought', limit: 2 });
    expect(toReserveResult(8, '4611686018427387904', 1_700_000_000_123)).toEqual({ outcome: 'replayed', orderId: '4611686018427387904' });
    expect(toReserveResult(3, 0, 1_700_000_000_123)).toEqual({ outcome: 'sold-out' });
  });

  it("passes the shard's keys, each voucher's keys once, an idem key per keyed order, then 5 arguments per order, as the header's lines say", () => {
    const { reserve } = saleOperations(new SaleKeys(8));
    const order = { orderId: '4611686018427387904', userId: '42', voucherId: '13' };
    const other = { orderId: '4611686018427387905', userId: '43', voucherId: '21', idempotencyKey: 'retry-1' };
    const again = { orderId: '4611686018427387906', userId: '44', voucherId: '13', idempotencyKey: 'k' };
    const batch = [
      { order, mode: 'stream' as const },
      { order: other, mode: 'hold' as const },
      { order: again, mode: 'stream' as const },
    ];
    // KEYS[n] and KEYS[+n] lines name the keys as patterns: {seckill:N}:voucher:{voucherId} and so on.
    const patterns = (match: RegExp) => [...header.matchAll(match)].map((found) => found[1]!);
    const shardKeys = patterns(/^\s*KEYS\[\d\]\s+(\S+)/gm);
    const [voucherKey, buyersKey, idemKey, ...more] = patterns(/^\s*KEYS\[\+\d\]\s+(\S+)/gm);
    expect([shardKeys.length, more.length]).toEqual([4, 0]);
    const named = (pattern: string, request: { userId: string; voucherId: string; idempotencyKey?: string }) =>
      pattern
        .replace('{seckill:N}', '{seckill:5}')
        .replace('{voucherId}', request.voucherId)
        .replace('{userId}', request.userId)
        .replace('{key}', request.idempotencyKey ?? '');
    expect(reserve.keys(batch)).toEqual([
      ...shardKeys.map((pattern) => named(pattern, order)),
      ...[voucherKey!, buyersKey!].map((pattern) => named(pattern, order)), // voucher 13, once for two orders
      ...[voucherKey!, buyersKey!].map((pattern) => named(pattern, other)), // voucher 21
      named(idemKey!, other),
      named(idemKey!, again),
    ]);
    expect(reserve.args(batch)).toEqual([
      SALE_KEYS_KEPT_AFTER_END_MS,
      2, // vouchers
      ...['42', '4611686018427387904', '13', 'stream', ''],
      ...['43', '4611686018427387905', '21', 'hold', IDEMPOTENCY_TTL_MS],
      ...['44', '4611686018427387906', '13', 'stream', IDEMPOTENCY_TTL_MS],
    ]);
    // 13 and 21 share shard 5 of 8; a batch over two shards is a bug of the caller.
    expect(() => reserve.keys([...batch, { order: { ...order, voucherId: '14' }, mode: 'stream' }])).toThrow(/spans \{seckill:5\} and \{seckill:6\}/);
  });

  it("reads one reply per order of the batch, an accepted one at the batch's time", () => {
    const { reserve } = saleOperations(new SaleKeys(8));
    expect(reserve.reply([1_700_000_000_123, 0, 1, 8, '77', 3, 0])).toEqual([
      { outcome: 'accepted', slot: 1, acceptedMs: 1_700_000_000_123 },
      { outcome: 'replayed', orderId: '77' },
      { outcome: 'sold-out' },
    ]);
  });
});
