/**
 * An error whose message is meant for the client. Thrown anywhere in a request, it becomes
 * `{success: false, errorMsg: message}` with its HTTP status; anything else is a 500 whose
 * details stay in the log.
 */
export class HttpError extends Error {
  override name = 'HttpError';

  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const badRequest = (message: string): HttpError => new HttpError(400, message);
export const unauthorized = (message = 'Please log in first'): HttpError => new HttpError(401, message);
export const forbidden = (message: string): HttpError => new HttpError(403, message);
export const notFound = (message: string): HttpError => new HttpError(404, message);

export function tooManyRequests(message: string, retryAfterMs: number): HttpError {
  // A refusal under load is routine, not a fault: skip the stack trace, the costliest part of an Error.
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new HttpError(429, message, { 'retry-after': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) });
  } finally {
    Error.stackTraceLimit = limit;
  }
}
