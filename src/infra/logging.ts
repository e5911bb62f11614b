import type { FastifyRequest, FastifyServerOptions } from 'fastify';
import type { BaseLogger } from 'pino';

/** What background jobs and features log through: the app's logger or a bare pino one. */
export type Log = Pick<BaseLogger, 'info' | 'warn' | 'error'>;

/**
 * What the logs may not contain, applied to every logger the app builds: session tokens (the
 * `authorization` header, any `token` field) are removed, and mainland-China mobile numbers are
 * masked to 138****5678 in fields named `phone` and in logged request URLs (`/user/code?phone=`).
 */

/** 11-digit mainland mobile numbers not inside a longer run of digits (ids are 18-19 digits). */
const PHONE_IN_TEXT = /(?<!\d)(1[3-9]\d)\d{4}(\d{4})(?!\d)/g;

/** 13812345678 → 138****5678; anything else that looks like a number keeps its first 3 and last 4 characters. */
export function maskPhone(phone: string): string {
  if (phone.length <= 7) return '*'.repeat(phone.length);
  return `${phone.slice(0, 3)}${'*'.repeat(phone.length - 7)}${phone.slice(-4)}`;
}

/** Masks every mobile number inside a text (URLs, messages). */
export function maskPhonesIn(text: string): string {
  return text.replace(PHONE_IN_TEXT, '$1****$2');
}

const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'authorization',
  'token',
  '*.token',
  'password',
  '*.password',
  'phone',
  '*.phone',
];

/** Tokens and passwords go; a phone number stays recognisable to the person who owns it. */
function censor(value: unknown, path: string[]): unknown {
  return path[path.length - 1] === 'phone' && typeof value === 'string' ? maskPhone(value) : '[Redacted]';
}

/** Fastify's request line, with phone numbers in the URL masked (the query of /user/code). */
function serializeRequest(request: FastifyRequest) {
  return {
    method: request.method,
    url: maskPhonesIn(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

export type LoggerOptions = Exclude<FastifyServerOptions['logger'], boolean | undefined>;

/**
 * Pino options for the app: the given level/destination plus redaction and the masking request
 * serializer. `false` stays false (no logging at all).
 */
export function secureLoggerOptions(options: FastifyServerOptions['logger'], level: string): FastifyServerOptions['logger'] {
  if (options === false) return false;
  const base = options === undefined || options === true ? { level } : options;
  return {
    ...base,
    redact: { paths: REDACTED_PATHS, censor },
    serializers: { ...(base.serializers ?? {}), req: serializeRequest },
  };
}
