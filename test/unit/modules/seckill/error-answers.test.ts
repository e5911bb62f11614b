import { describe, expect, it } from 'vitest';
import { answerOf } from '../../../../src/http/error-answers.js';
import { render } from '../../../../src/lib/messages/index.js';
import { SECKILL_ERROR_ANSWERS } from '../../../../src/modules/seckill/error-routes.js';
import * as errors from '../../../../src/modules/seckill/errors/index.js';
import { SECKILL_MESSAGES } from '../../../../src/modules/seckill/messages.js';

/** One error of each class the sale throws (src/modules/seckill/errors/). */
const SAMPLES: errors.SeckillError[] = [
  new errors.SaleRefused('sold-out', SECKILL_MESSAGES.soldOut()),
  new errors.GateRefused(SECKILL_MESSAGES.gateTokenSpent()),
  new errors.RateLimited(SECKILL_MESSAGES.tooManyBuyers, 1_500),
  new errors.InvalidInput(SECKILL_MESSAGES.endBeforeBegin()),
  new errors.NotFound(SECKILL_MESSAGES.orderNotFound({ orderId: '1' })),
  new errors.UnknownVoucher('42'),
  new errors.Conflict(SECKILL_MESSAGES.saleChangeBusy()),
  new errors.IdempotencyKeyReused('7'),
  new errors.TooEarly(10_000, 7_500),
  new errors.OutcomeUnknown('9', '42', new Error('stalled')),
  new errors.TemporarilyUnavailable(SECKILL_MESSAGES.bucketsRefilling()),
];

/** The classes errors/index.ts exports, but the two abstract bases. */
const CLASSES = Object.values(errors).filter(
  (value): value is typeof errors.SeckillError => typeof value === 'function' && value.prototype instanceof errors.SeckillError && value !== errors.Refusal,
);

describe("the sale's errors as HTTP answers (error-routes.ts)", () => {
  it('has a row for every class the sale throws: none falls through to a 500', () => {
    expect(CLASSES.length).toBeGreaterThanOrEqual(10);
    for (const type of CLASSES)
      expect(
        SAMPLES.some((sample) => sample.constructor === type),
        type.name,
      ).toBe(true);
    for (const sample of SAMPLES) expect(answerOf(SECKILL_ERROR_ANSWERS, sample), sample.name).toBeDefined();
  });

  it('answers a refusal below 500 and a failure 503 with Retry-After', () => {
    for (const sample of SAMPLES) {
      const row = answerOf(SECKILL_ERROR_ANSWERS, sample)!;
      if (sample instanceof errors.Refusal) expect(row.status, sample.name).toBeLessThan(500);
      else {
        expect(row.status, sample.name).toBe(503);
        expect(row.headers?.(sample), sample.name).toEqual({ 'retry-after': '1' });
      }
    }
  });

  it('asks for the wait its message names, in whole seconds', () => {
    const limited = SAMPLES.find((sample) => sample instanceof errors.RateLimited)!;
    expect(answerOf(SECKILL_ERROR_ANSWERS, limited)!.headers?.(limited)).toEqual({ 'retry-after': '2' });
    expect(render(limited.userMessage, 'en')).toContain('2');
    const early = SAMPLES.find((sample) => sample instanceof errors.TooEarly)!;
    expect(answerOf(SECKILL_ERROR_ANSWERS, early)!.headers?.(early)).toEqual({ 'retry-after': '3' });
    expect(early.message).toMatch(/\b3 s\b/);
  });

  it('makes the routine refusals without a stack trace, the others with one', () => {
    const routine = SAMPLES.filter((sample) => [errors.SaleRefused, errors.GateRefused, errors.RateLimited].some((type) => sample instanceof type));
    expect(routine).toHaveLength(3);
    for (const sample of routine) expect(sample.stack?.split('\n'), sample.name).toHaveLength(1);
    const traced = SAMPLES.find((sample) => sample instanceof errors.OutcomeUnknown)!;
    expect(traced.stack?.split('\n').length).toBeGreaterThan(1);
    expect(Error.stackTraceLimit).toBeGreaterThan(0);
  });
});
