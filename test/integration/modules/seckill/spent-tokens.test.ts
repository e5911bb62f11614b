import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpentTokens } from '../../../../src/modules/seckill/gate/spent-tokens.js';
import { connectRedis, deleteKeys, uniquePrefix } from '../../../support/redis.js';

const keyPrefix = uniquePrefix('spent-tokens');
let redis: Redis;

beforeAll(() => {
  redis = connectRedis(keyPrefix, { enableAutoPipelining: true });
});

afterAll(async () => {
  await deleteKeys(keyPrefix);
  redis.disconnect();
});

const IN_A_MINUTE = () => Date.now() + 60_000;

/** Spends of every outcome: a token twice without a key, twice with one key, with a key then another. */
const spends = (who: string): Array<[nonce: string, idempotencyKey: string | undefined]> => [
  [`${who}a`, undefined],
  [`${who}a`, undefined],
  [`${who}b`, 'k1'],
  [`${who}b`, 'k1'],
  [`${who}c`, 'k1'],
  [`${who}c`, 'k2'],
  [`${who}c`, undefined],
];

describe('SpentTokens: a purchase token buys one order', () => {
  it('spends the tokens that arrive while a call is out in one script call, each decided as alone', async () => {
    const oneAtATime = new SpentTokens(redis);
    const alone: boolean[] = [];
    for (const [nonce, key] of spends('alone-')) alone.push(await oneAtATime.spend(nonce, IN_A_MINUTE(), key));

    const batches: number[] = [];
    const batched = new SpentTokens(redis, { onBatch: (size) => batches.push(size) });
    const together = await Promise.all(spends('together-').map(([nonce, key]) => batched.spend(nonce, IN_A_MINUTE(), key)));

    expect(alone).toEqual([true, false, true, true, true, false, false]);
    expect(together).toEqual(alone);
    // The first spend went out at once; the six that arrived while it was out went in one call.
    expect(batches).toEqual([1, 6]);
    expect(await redis.hgetall('seckill:purchase-token:together-b')).toEqual({ key: 'k1', attempts: '2' });
    expect(await redis.pttl('seckill:purchase-token:together-c')).toBeGreaterThan(60_000);
  });

  it('gives a token back, so it buys again', async () => {
    const tokens = new SpentTokens(redis);
    expect(await tokens.spend('back', IN_A_MINUTE(), undefined)).toBe(true);
    expect(await tokens.spend('back', IN_A_MINUTE(), undefined)).toBe(false);
    await tokens.giveBack('back');
    expect(await tokens.spend('back', IN_A_MINUTE(), undefined)).toBe(true);
  });
});
