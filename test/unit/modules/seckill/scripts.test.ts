import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SALE_KEYS_KEPT_AFTER_END_MS, SaleKeys } from '../../../../src/modules/seckill/keys.js';
import { reserveArgs, toReserveOutcome } from '../../../../src/modules/seckill/scripts.js';

/** reserve.lua's header: its KEYS lines and the sentence listing its return codes. */
const reserveLua = readFileSync(new URL('../../../../src/modules/seckill/lua/reserve.lua', import.meta.url), 'utf8');
const header = reserveLua.slice(0, reserveLua.indexOf(']]'));

describe('reserve.lua as a typed function', () => {
  it('reads each return code the way reserve.lua documents it', () => {
    // "Returns 0 accepted, 1 not started, 2 ended, ..." up to the first parenthesis.
    const documented = [...(/Returns ([^(]*)/.exec(header)?.[1] ?? '').matchAll(/(\d+) ([a-z ]+?)(?:,|$)/gm)].map(
      (match) => [Number(match[1]), match[2]!.trim().replaceAll(' ', '-')] as const,
    );
    expect(documented.length).toBeGreaterThanOrEqual(7);
    for (const [code, outcome] of documented) expect(toReserveOutcome(code), `code ${code}`).toBe(outcome);
  });

  it('refuses a code the script does not return instead of guessing', () => {
    // Far past the codes reserve.lua returns (0-7 today), so adding an outcome never breaks this.
    expect(() => toReserveOutcome(99)).toThrow('reserve.lua returned unexpected 99');
    expect(() => toReserveOutcome(-1)).toThrow(/unexpected -1/);
  });

  it("passes the keys in the order of the header's KEYS lines, all on the voucher's shard, then the order", () => {
    const keys = new SaleKeys(8);
    const order = { orderId: '4611686018427387904', userId: '42', voucherId: '13' };
    const args = reserveArgs(keys, order);
    // KEYS[i] lines name the keys as patterns: {seckill:N}:voucher:{voucherId} and so on.
    const patterns = [...header.matchAll(/^\s*KEYS\[(\d)\]\s+(\S+)/gm)].map((match) => match[2]!);
    const expected = patterns.map((pattern) => pattern.replace('{seckill:N}', '{seckill:5}').replace('{voucherId}', '13'));
    expect(args.slice(0, patterns.length)).toEqual(expected);
    expect(args.slice(patterns.length)).toEqual(['42', '4611686018427387904', '13', SALE_KEYS_KEPT_AFTER_END_MS, 'stream']);
    expect(reserveArgs(keys, order, 'hold').at(-1)).toBe('hold');
  });
});
