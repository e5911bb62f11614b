import { describe, expect, it } from 'vitest';
import { defineMessages } from '../../../src/lib/messages/index.js';
import { conflict, invalid, rateLimited, Refusal, retryAfterSeconds, unavailable } from '../../../src/lib/refusals/index.js';

const MESSAGES = defineMessages('test.refusals', {
  taken: { en: 'Name {name} is taken', zh: '名称 {name} 已被占用' },
  wait: { en: 'Try again in {seconds} s', zh: '请 {seconds} 秒后再试' },
});

describe('refusals', () => {
  it('carry their kind and the message in both languages, English as the error message', () => {
    const refusal = conflict(MESSAGES.taken({ name: 'a' }));
    expect(refusal).toBeInstanceOf(Refusal);
    expect(refusal).toMatchObject({ kind: 'conflict', message: 'Name a is taken', retryAfterMs: undefined });
    expect(invalid(MESSAGES.taken({ name: 'b' })).kind).toBe('invalid');
  });

  it('a rate limit says the wait in whole seconds, at least one, and keeps the exact wait', () => {
    expect([0, 1, 999, 1000, 1001].map(retryAfterSeconds)).toEqual([1, 1, 1, 1, 2]);
    const limited = rateLimited(MESSAGES.wait, 2_500);
    expect(limited).toMatchObject({ kind: 'rate-limited', message: 'Try again in 3 s', retryAfterMs: 2_500 });
    expect(unavailable(MESSAGES.wait({ seconds: 60 }), 60_000)).toMatchObject({ kind: 'unavailable', retryAfterMs: 60_000 });
  });
});
