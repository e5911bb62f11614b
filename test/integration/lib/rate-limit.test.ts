import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AdmissionLimiter,
  RateLimit,
  RateLimiter,
  type RateLimitCheck,
  type RateLimitDecision,
  type RateLimitRule,
} from '../../../src/lib/rate-limit/index.js';
import { connectRedis, deleteKeys, uniquePrefix } from '../../support/redis.js';

const keyPrefix = uniquePrefix('rate-limit');
let redis: Redis;
let other: Redis;

beforeAll(() => {
  redis = connectRedis(keyPrefix, { enableAutoPipelining: true });
  other = connectRedis(keyPrefix, { enableAutoPipelining: true });
});

afterAll(async () => {
  await deleteKeys(keyPrefix);
  redis.disconnect();
  other.disconnect();
});

/** Waits until a Redis second has just begun, so a burst fits in one window of the admission limiter. */
async function startOfRedisSecond(): Promise<void> {
  const [, micros] = await redis.time();
  await sleep(1000 - Math.floor(Number(micros) / 1000) + 20);
}

describe('RateLimiter (fixed windows on Redis)', () => {
  it('allows `limit` events per window, refuses the next with the time left, and allows again after the window', async () => {
    const limiter = new RateLimiter(redis);
    const rule: RateLimitRule = { name: 'lib:threshold', limit: 3, windowSeconds: 1 };
    for (let i = 0; i < 3; i += 1) expect(await limiter.consume([{ rule, subject: 'u1' }])).toEqual({ allowed: true });
    const refused = await limiter.consume([{ rule, subject: 'u1' }]);
    expect(refused).toMatchObject({ allowed: false, rule: 'lib:threshold' });
    if (refused.allowed) throw new Error('unreachable');
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(1000);
    // Another subject has its own counter.
    expect(await limiter.consume([{ rule, subject: 'u2' }])).toEqual({ allowed: true });
    expect(Number(await redis.get('rl:lib:threshold:u1'))).toBe(3);
    expect(await redis.pttl('rl:lib:threshold:u1')).toBeLessThanOrEqual(1000);

    await sleep(refused.retryAfterMs + 100);
    expect(await limiter.consume([{ rule, subject: 'u1' }])).toEqual({ allowed: true });
  });

  it('checks several rules in one call, all or nothing: a refused event charges no rule', async () => {
    const limiter = new RateLimiter(redis);
    const strict: RateLimitRule = { name: 'lib:strict', limit: 1, windowSeconds: 60 };
    const loose: RateLimitRule = { name: 'lib:loose', limit: 100, windowSeconds: 60 };
    const checks = [
      { rule: loose, subject: 'ip1' },
      { rule: strict, subject: 'user1' },
    ];
    expect(await limiter.consume(checks)).toEqual({ allowed: true });
    expect(await limiter.consume(checks)).toMatchObject({ allowed: false, rule: 'lib:strict' });
    expect(await redis.get('rl:lib:loose:ip1')).toBe('1');
    expect(await redis.get('rl:lib:strict:user1')).toBe('1');
  });

  it('checks the events that arrive while a call is out in one script call, each decided as one at a time would be', async () => {
    const limit2: RateLimitRule = { name: 'lib:batch', limit: 2, windowSeconds: 60 };
    const strict: RateLimitRule = { name: 'lib:batch-strict', limit: 1, windowSeconds: 60 };
    const bytes: RateLimitRule = { name: 'lib:batch-bytes', limit: 10, windowSeconds: 60 };
    /** A mix of outcomes: a third event of one subject, a refusal by a second rule, costs that do and do not fit. */
    const events = (who: string): RateLimitCheck[][] => [
      [{ rule: limit2, subject: `${who}a` }],
      [{ rule: limit2, subject: `${who}a` }],
      [{ rule: limit2, subject: `${who}a` }],
      [
        { rule: limit2, subject: `${who}b` },
        { rule: strict, subject: `${who}b` },
      ],
      [
        { rule: limit2, subject: `${who}b` },
        { rule: strict, subject: `${who}b` },
      ],
      [{ rule: limit2, subject: `${who}b` }],
      [{ rule: bytes, subject: `${who}c`, cost: 8 }],
      [{ rule: bytes, subject: `${who}c`, cost: 3 }],
      [{ rule: bytes, subject: `${who}c`, cost: 2 }],
    ];
    const verdict = (decision: RateLimitDecision) => (decision.allowed ? 'allowed' : decision.rule);
    const counters = (who: string) => redis.mget(`rl:lib:batch:${who}a`, `rl:lib:batch:${who}b`, `rl:lib:batch-strict:${who}b`, `rl:lib:batch-bytes:${who}c`);

    const alone: string[] = [];
    const oneAtATime = new RateLimiter(redis);
    for (const checks of events('alone-')) alone.push(verdict(await oneAtATime.consume(checks)));

    const batches: number[] = [];
    const batched = new RateLimiter(redis, { onBatch: (size) => batches.push(size) });
    const together = await Promise.all(events('together-').map((checks) => batched.consume(checks)));

    expect(alone).toEqual(['allowed', 'allowed', 'lib:batch', 'allowed', 'lib:batch-strict', 'allowed', 'allowed', 'lib:batch-bytes', 'allowed']);
    expect(together.map(verdict)).toEqual(alone);
    expect(await counters('together-')).toEqual(await counters('alone-'));
    // The first event went out at once; the eight that arrived while it was out went in one call.
    expect(batches).toEqual([1, 8]);
  });

  it('remembers a refusal in the process until its window ends, so a flood costs no Redis command', async () => {
    const rejected: string[] = [];
    const limiter = new RateLimiter(redis, { onReject: (rule) => rejected.push(rule) });
    const rule: RateLimitRule = { name: 'lib:memory', limit: 1, windowSeconds: 1 };
    expect(await limiter.consume([{ rule, subject: 's' }])).toEqual({ allowed: true });
    expect(await limiter.consume([{ rule, subject: 's' }])).toMatchObject({ allowed: false });
    // Redis forgets the counter; the process still refuses from memory (no command reached Redis).
    await redis.del('rl:lib:memory:s');
    expect(limiter.rememberedRefusal([{ rule, subject: 's' }])).toMatchObject({ allowed: false, rule: 'lib:memory' });
    expect(await limiter.consume([{ rule, subject: 's' }])).toMatchObject({ allowed: false });
    expect(await redis.exists('rl:lib:memory:s')).toBe(0);
    expect(rejected).toEqual(['lib:memory', 'lib:memory', 'lib:memory']);
    await sleep(1_100);
    expect(await limiter.consume([{ rule, subject: 's' }])).toEqual({ allowed: true });
  });

  it('charges an event its cost (a byte quota): refused when it does not fit, nothing charged, and a smaller one still fits', async () => {
    const limiter = new RateLimiter(redis);
    const bytes = new RateLimit(limiter, [{ name: 'lib:bytes', limit: 1000, windowSeconds: 60 }]);
    expect(await bytes.consume('u', 600)).toEqual({ allowed: true });
    expect(await bytes.consume('u', 500)).toMatchObject({ allowed: false, rule: 'lib:bytes' });
    expect(await redis.get('rl:lib:bytes:u')).toBe('600'); // the refused 500 undone
    // Not remembered: what is left of the window still takes a smaller event.
    expect(await bytes.consume('u', 400)).toEqual({ allowed: true });
    expect(await bytes.consume('u', 1)).toMatchObject({ allowed: false });
    expect(await redis.get('rl:lib:bytes:u')).toBe('1000');
  });

  it('treats limit 0 as off: always allowed, nothing written', async () => {
    const limiter = new RateLimiter(redis);
    const off = new RateLimit(limiter, [{ name: 'lib:off', limit: 0, windowSeconds: 1 }]);
    for (let i = 0; i < 20; i += 1) expect(await off.consume('x')).toEqual({ allowed: true });
    expect(await redis.exists('rl:lib:off:x')).toBe(0);
  });

  it('lets a local burst through without Redis, charges it with the next checked event, and stays exact for one rule in one process', async () => {
    const limiter = new RateLimiter(redis);
    const rule: RateLimitRule = { name: 'lib:burst', limit: 4, windowSeconds: 1, localBurst: 2 };
    const check = () => limiter.consume([{ rule, subject: 'b' }]);
    expect(await check()).toEqual({ allowed: true });
    expect(await check()).toEqual({ allowed: true });
    expect(await redis.exists('rl:lib:burst:b')).toBe(0); // two events, no command
    expect(await check()).toEqual({ allowed: true });
    expect(await redis.get('rl:lib:burst:b')).toBe('3'); // the burst charged with the third event
    expect(await check()).toEqual({ allowed: true });
    expect(await check()).toMatchObject({ allowed: false, rule: 'lib:burst' });
    expect(await redis.get('rl:lib:burst:b')).toBe('4');
    await sleep(1_100);
    expect(await check()).toEqual({ allowed: true });
  });

  it('bounds the local bursts of several processes by limit + processes × burst', async () => {
    const rule: RateLimitRule = { name: 'lib:burst-shared', limit: 10, windowSeconds: 60, localBurst: 3 };
    const limiters = [new RateLimiter(redis), new RateLimiter(other)];
    const decisions = await Promise.all(Array.from({ length: 60 }, (_, i) => limiters[i % 2]!.consume([{ rule, subject: 'u' }])));
    const allowed = decisions.filter((decision) => decision.allowed).length;
    expect(allowed).toBeGreaterThanOrEqual(10);
    expect(allowed).toBeLessThanOrEqual(10 + 2 * 3);
  });

  it('holds across two processes sharing Redis (two clients, two limiters)', async () => {
    const rule: RateLimitRule = { name: 'lib:shared', limit: 10, windowSeconds: 60 };
    const limiters = [new RateLimiter(redis), new RateLimiter(other)];
    const decisions = await Promise.all(Array.from({ length: 40 }, (_, i) => limiters[i % 2]!.consume([{ rule, subject: 'u' }])));
    expect(decisions.filter((decision) => decision.allowed)).toHaveLength(10);
  });
});

describe('AdmissionLimiter (per-subject rate across instances, leased in blocks)', () => {
  it('admits at most the rate per Redis second across two instances, then refuses from memory, and resets the next second', async () => {
    const refusals = [0, 0];
    const gates = [0, 1].map(
      (i) => new AdmissionLimiter(i === 0 ? redis : other, { name: 'lib:sale', ratePerSecond: 50, blockSize: 5, onReject: () => (refusals[i]! += 1) }),
    );
    await startOfRedisSecond();
    const [before] = await redis.time();
    const decisions = await Promise.all(Array.from({ length: 400 }, (_, i) => gates[i % 2]!.admit('v1')));
    const [after] = await redis.time();
    const spanned = Number(after) - Number(before) + 1;
    const admitted = decisions.filter((decision) => decision.admitted).length;
    // The burst normally fits in one second; on a stalled machine the bound grows with the seconds it spanned.
    expect(admitted).toBeLessThanOrEqual(50 * spanned);
    if (spanned === 1) expect(admitted).toBe(50); // demand far above the rate: every leased block is used up
    const perGate = [0, 1].map((g) => decisions.filter((decision, i) => i % 2 === g && decision.admitted).length);
    expect(perGate[0]).toBeGreaterThan(0);
    expect(perGate[1]).toBeGreaterThan(0);
    expect(refusals[0]! + refusals[1]!).toBe(400 - admitted);
    const refused = decisions.find((decision) => !decision.admitted);
    if (!refused || refused.admitted) throw new Error('expected a refusal');
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(1000);

    // Refusals cost Redis nothing: the second's lease counter never went past the rate.
    if (spanned === 1) expect(Number(await redis.hget('rl:lib:sale:v1', 'n'))).toBe(50);
    await startOfRedisSecond();
    expect(await gates[0]!.admit('v1')).toEqual({ admitted: true });
    expect(await gates[1]!.admit('v1')).toEqual({ admitted: true });
    // Subjects are independent.
    expect(await gates[0]!.admit('v2')).toEqual({ admitted: true });
  });

  it('leases one block per round trip: N admissions cost about N / blockSize script calls', async () => {
    const gate = new AdmissionLimiter(redis, { name: 'lib:blocks', ratePerSecond: 1000, blockSize: 100 });
    await startOfRedisSecond();
    const decisions = await Promise.all(Array.from({ length: 250 }, () => gate.admit('v')));
    expect(decisions.every((decision) => decision.admitted)).toBe(true);
    // 250 admissions took 3 leases of 100: the hash counts leased tokens.
    expect(Number(await redis.hget('rl:lib:blocks:v', 'n'))).toBe(300);
  });

  it('is off at rate 0: admits everything and writes nothing', async () => {
    const gate = new AdmissionLimiter(redis, { name: 'lib:off', ratePerSecond: 0 });
    for (let i = 0; i < 10; i += 1) expect(await gate.admit('v')).toEqual({ admitted: true });
    expect(await redis.exists('rl:lib:off:v')).toBe(0);
  });
});
