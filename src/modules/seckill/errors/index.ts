/**
 * The sale's refusals and failures: plain classes, one file per class or small family, free of
 * HTTP. Each carries what its answer needs (the user's message, a wait, an order id); the HTTP
 * status and headers of each are in one table at the routes (../error-routes.ts).
 */
export { Conflict } from './conflict.js';
export { GateRefused } from './gate-refused.js';
export { IdempotencyKeyReused } from './idempotency-key-reused.js';
export { InvalidInput } from './invalid-input.js';
export { NotFound, UnknownVoucher } from './not-found.js';
export { OutcomeUnknown, orderDeadlineMessage } from './outcome-unknown.js';
export { RateLimited } from './rate-limited.js';
export { SaleRefused, throwIfRefused } from './sale-refused.js';
export { Refusal, SeckillError, secondsToWait } from './seckill-error.js';
export { TemporarilyUnavailable } from './temporarily-unavailable.js';
export { TooEarly } from './too-early.js';
