import { HTTP_MESSAGES } from './http-messages.js';
import { render, type Message } from '../lib/messages/index.js';
import { forbidden, invalid, notFound, rateLimited, Refusal, unauthenticated } from '../lib/refusals/index.js';

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

/**
 * The route layer's refusals are the domain's (src/lib/refusals), under HTTP's names: one kind of
 * error, one answer table (REFUSAL_STATUS in error-handling.ts). HttpError stays for the statuses
 * no refusal names (414, a malformed request's 400 decided before routing).
 */
export const badRequest = invalid;
export const unauthorized = (message: Message = HTTP_MESSAGES.loginRequired()): Refusal => unauthenticated(message);
export { forbidden, notFound };
/** A 429 with Retry-After; the message gets `seconds`, the wait rounded up to whole seconds. */
export const tooManyRequests = rateLimited;
