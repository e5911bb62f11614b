import { HTTP_MESSAGES } from './http-messages.js';
import { render, type Message } from '../lib/messages/index.js';
import { retryAfterSeconds } from '../lib/refusals/index.js';

/**
 * An error whose message is meant for the client. Thrown anywhere in a request, it becomes
 * `{success: false, errorMsg}` with its HTTP status, the message in the request's language
 * (src/lib/messages); a module's own errors are answered by its table (error-answers.ts), anything
 * else is a 500 whose details stay in the log. `message` is the English text, for logs.
 */
export class HttpError extends Error {
  override name = 'HttpError';

  constructor(
    readonly statusCode: number,
    readonly userMessage: Message,
    readonly headers: Record<string, string> = {},
  ) {
    super(render(userMessage, 'en'));
  }
}

export const badRequest = (message: Message): HttpError => new HttpError(400, message);
export const unauthorized = (message: Message = HTTP_MESSAGES.loginRequired()): HttpError => new HttpError(401, message);
export const forbidden = (message: Message): HttpError => new HttpError(403, message);
export const notFound = (message: Message): HttpError => new HttpError(404, message);

/** A 429 with Retry-After; the message gets `seconds`, the wait rounded up to whole seconds. */
export function tooManyRequests(message: (params: { seconds: number }) => Message, retryAfterMs: number): HttpError {
  const seconds = retryAfterSeconds(retryAfterMs);
  // A refusal under load is routine, not a fault: skip the stack trace, the costliest part of an Error.
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new HttpError(429, message({ seconds }), { 'retry-after': String(seconds) });
  } finally {
    Error.stackTraceLimit = limit;
  }
}
