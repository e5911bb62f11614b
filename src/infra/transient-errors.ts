/**
 * Errors that say "a dependency is unreachable or busy right now" rather than anything about the
 * request or message being handled: worth a retry, never a reason to give up on the work itself.
 */
const TRANSIENT_CODES = new Set([
  // sockets
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  // mysql2 / MySQL
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_CON_COUNT_ERROR',
  'ER_LOCK_DEADLOCK',
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_SERVER_SHUTDOWN',
  'ER_QUERY_INTERRUPTED',
]);

/** ioredis: commands that failed because the connection is down (after its own retries). */
const TRANSIENT_NAMES = new Set(['MaxRetriesPerRequestError']);
const TRANSIENT_MESSAGES = [/Connection is closed/, /Stream isn't writeable/, /CLUSTERDOWN/, /TRYAGAIN/, /LOADING/, /MASTERDOWN/];

export function isTransient(error: unknown): boolean {
  for (let current = error; current instanceof Error; current = current.cause) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && TRANSIENT_CODES.has(code)) return true;
    if (TRANSIENT_NAMES.has(current.name)) return true;
    if (TRANSIENT_MESSAGES.some((pattern) => pattern.test(current.message))) return true;
    if (current instanceof AggregateError && current.errors.some(isTransient)) return true;
  }
  return false;
}
