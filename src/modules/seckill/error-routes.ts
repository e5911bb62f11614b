import { answer, type ErrorAnswer } from '../../http/error-answers.js';
import {
  Conflict,
  GateRefused,
  IdempotencyKeyReused,
  InvalidInput,
  NotFound,
  OutcomeUnknown,
  RateLimited,
  SaleRefused,
  secondsToWait,
  TemporarilyUnavailable,
  TooEarly,
} from './errors/index.js';

/** Come back in `retryAfterMs`: the same whole seconds as the message says. */
const retryAfter = (error: { retryAfterMs: number }): Record<string, string> => ({ 'retry-after': String(secondsToWait(error.retryAfterMs)) });

/**
 * The sale's errors (errors/) as HTTP answers, the one place that decides them: status and
 * headers here, `{success: false, errorMsg}` with the error's message in the request's language
 * (src/http/error-answers.ts). The first row whose class the error is an instance of answers it;
 * an error of no row goes on to the app's handler (500, or 503 for an unreachable dependency).
 */
export const SECKILL_ERROR_ANSWERS: readonly ErrorAnswer[] = [
  // hmdp's answer to a refused order: 200 with success false. First: most requests of a flash sale get one.
  answer(SaleRefused, 200),
  answer(RateLimited, 429, retryAfter),
  // 403, never 401, which a client reads as "logged out".
  answer(GateRefused, 403),
  answer(InvalidInput, 400),
  answer(NotFound, 404),
  answer(Conflict, 409),
  answer(IdempotencyKeyReused, 422),
  answer(TooEarly, 425, retryAfter),
  // The order may have been accepted: never a refusal, and retried only after a look (the message says where).
  answer(OutcomeUnknown, 503, retryAfter),
  answer(TemporarilyUnavailable, 503, retryAfter),
];
