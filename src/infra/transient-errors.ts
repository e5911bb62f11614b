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
const TRANSIENT_NAMES = new Set(['MaxRetriesPerRequestError', 'DependencyUnavailable']);
const REDIS_DOWN_MESSAGES = [/Connection is closed/, /Stream isn't writeable/, /CLUSTERDOWN/, /TRYAGAIN/, /LOADING/, /MASTERDOWN/, /Ready check failed/];
/** ioredis `commandTimeout`: sent (or queued) and no reply in time; the command may still run. */
const REDIS_STALLED_MESSAGES = [/^Command timed out$/];
const TRANSIENT_MESSAGES = [...REDIS_DOWN_MESSAGES, ...REDIS_STALLED_MESSAGES];

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

export type DependencyName = 'Redis' | 'MySQL';

/**
 * A dependency did not answer: `stalled` when it took too long (connected, silent), otherwise it
 * refused or dropped the connection. `address` is for logs and command-line messages (never a
 * password); HTTP answers name the dependency only.
 */
export class DependencyUnavailable extends Error {
  override name = 'DependencyUnavailable';

  constructor(
    readonly dependency: DependencyName,
    readonly address: string,
    readonly stalled: boolean,
    cause: unknown,
  ) {
    super(`${dependency} at ${address} ${stalled ? 'did not answer in time' : 'is unreachable'}: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    });
  }
}

/** Which dependency an error says is unavailable, and whether it stalled; undefined when the error says nothing of the kind. */
export function unavailableDependency(error: unknown): { dependency: DependencyName; stalled: boolean } | undefined {
  for (let current = error; current instanceof Error; current = current.cause) {
    if (current instanceof DependencyUnavailable) return { dependency: current.dependency, stalled: current.stalled };
    if (REDIS_STALLED_MESSAGES.some((pattern) => pattern.test(current.message))) return { dependency: 'Redis', stalled: true };
    if (current.name === 'MaxRetriesPerRequestError' || REDIS_DOWN_MESSAGES.some((pattern) => pattern.test(current.message))) {
      return { dependency: 'Redis', stalled: false };
    }
  }
  return undefined;
}
