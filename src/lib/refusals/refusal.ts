import { render, type Message } from '../messages/index.js';

/**
 * Why a request is refused, in the domain's words; a transport maps each to its own answer (the
 * HTTP layer: 400, 401, 403, 404, 409, 413, 429, 503).
 */
export type RefusalKind = 'invalid' | 'unauthenticated' | 'forbidden' | 'not-found' | 'conflict' | 'too-large' | 'rate-limited' | 'unavailable';

/**
 * A refusal whose message is meant for the person who asked, in both languages
 * (src/lib/messages); `message` is the English text, for logs. `retryAfterMs`: when asking again
 * may succeed (rate limits, a dependency that is busy).
 */
export class Refusal extends Error {
  override name = 'Refusal';

  constructor(
    readonly kind: RefusalKind,
    readonly userMessage: Message,
    readonly retryAfterMs?: number,
  ) {
    super(render(userMessage, 'en'));
  }
}

export const invalid = (message: Message): Refusal => new Refusal('invalid', message);
export const unauthenticated = (message: Message): Refusal => new Refusal('unauthenticated', message);
export const forbidden = (message: Message): Refusal => new Refusal('forbidden', message);
export const notFound = (message: Message): Refusal => new Refusal('not-found', message);
export const conflict = (message: Message): Refusal => new Refusal('conflict', message);
export const tooLarge = (message: Message): Refusal => new Refusal('too-large', message);

/** Whole seconds to wait, at least one: what a message and a Retry-After say. */
export const retryAfterSeconds = (retryAfterMs: number): number => Math.max(1, Math.ceil(retryAfterMs / 1000));

/** Refused until `retryAfterMs` has passed; the message gets `seconds`, the wait in whole seconds. */
export function rateLimited(message: (params: { seconds: number }) => Message, retryAfterMs: number): Refusal {
  // A refusal under load is routine, not a fault: skip the stack trace, the costliest part of an Error.
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new Refusal('rate-limited', message({ seconds: retryAfterSeconds(retryAfterMs) }), retryAfterMs);
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** A dependency of the request's own (not Redis or MySQL, which the HTTP layer names) cannot serve it now. */
export const unavailable = (message: Message, retryAfterMs: number): Refusal => new Refusal('unavailable', message, retryAfterMs);
