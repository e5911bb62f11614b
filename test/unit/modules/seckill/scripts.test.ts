import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SALE_KEYS_KEPT_AFTER_END_MS, SaleKeys } from '../../../../src/modules/seckill/keys.js';
import { IDEMPOTENCY_TTL_MS, USER_ORDERS_TTL_MS } from '../../../../src/modules/seckill/keys.js';
import { saleOperations, toReserveOutcome, toReserveResult, type ReserveMode } from '../../../../src/modules/seckill/sale/sale-scripts.js';

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
    expect(toReserveResult([0, 3, 1_700_000_000_123])).toEqual({ outcome: 'accepted', slot: 3, acceptedMs: 1_700_000_000_123 });
    expect(toReserveResult([4, 2])).toEqual({ outcome: 'already-bought', limit: 2 });
    expect(toReserveResult([8, '4611686018427387904'])).toEqual({ outcome: 'replayed', orderId: '4611686018427387904' });
    expect(toReserveResult([3, 0])).toEqual({ outcome: 'sold-out' });
  });

  it("passes the keys in the order of the header's KEYS lines, all on the voucher's shard, then the order", () => {
    const { reserve } = saleOperations(new SaleKeys(8));
    const order = { orderId: '4611686018427387904', userId: '42', voucherId: '13' };
    const reserveArgs = (request: typeof order & { idempotencyKey?: string }, mode: ReserveMode = 'stream') => [
      ...reserve.keys({ order: request, mode }),
      ...reserve.args({ order: request, mode }),
    ];
    // KEYS[i] lines name the keys as patterns: {seckill:N}:voucher:{voucherId} and so on.
    const patterns = [...header.matchAll(/^\s*KEYS\[(\d)\]\s+(\S+)/gm)].map((match) => match[2]!);
    const expected = patterns.map((pattern) =>
      pattern.replace('{seckill:N}', '{seckill:5}').replace('{voucherId}', '13').replace('{userId}', '42').replace('{key}', 'retry-1'),
    );
    const withKey = reserveArgs({ ...order, idempotencyKey: 'retry-1' });
    expect(withKey.slice(0, patterns.length)).toEqual(expected);
    expect(withKey.slice(patterns.length)).toEqual([
      '42',
      '4611686018427387904',
      '13',
      SALE_KEYS_KEPT_AFTER_END_MS,
      'stream',
      IDEMPOTENCY_TTL_MS,
      USER_ORDERS_TTL_MS,
    ]);
    // Without a key, KEYS[7] stays on the hash slot and the TTL argument is empty (the script skips it).
    const args = reserveArgs(order);
    expect(args[6]).toBe('{seckill:5}:idem:42:');
    expect(args[patterns.length + 5]).toBe('');
    expect(reserveArgs(order, 'hold')[patterns.length + 4]).toBe('hold');
  });
});
