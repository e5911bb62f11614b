import type { FastifyRequest, FastifyServerOptions } from 'fastify';
import pino, { type BaseLogger, type DestinationStream } from 'pino';

/** What background jobs and features log through: the app's logger or a bare pino one. */
export type Log = Pick<BaseLogger, 'info' | 'warn' | 'error'>;

/**
 * What the logs may not contain, applied to every logger the app builds: session tokens (the
 * `authorization` header, any `token` field) are removed, and mainland-China mobile numbers are
 * masked to 138****5678 in fields named `phone`. Then every line, whatever wrote it (a message, an error, a field of any name), is masked once
 * more as text before it leaves the process (`maskSecrets`): phones in any written form, token
 * query parameters, and words shaped like session tokens.
 */

/**
 * Mainland mobile numbers as people write them, not inside a longer run of digits (ids are 18-19
 * digits) nor after a decimal point: 13912345678, 8613912345678, +8613912345678, 008613912345678,
 * +86 139 1234 5678, 139-1234-5678, 139 1234 5678, 139.1234.5678, and URL-encoded
 * (%2B86, %20 or + between the groups).
 */
const SEPARATOR = '(?:[ .-]|%20|\\+)?';
const PHONE_IN_TEXT = new RegExp(`(?<![\\d+])(?<!\\d\\.)((?:\\+|00|%2B)?86${SEPARATOR})?(1[3-9]\\d)${SEPARATOR}\\d{4}${SEPARATOR}(\\d{4})(?!\\d)`, 'gi');

/** Query parameters that carry credentials: their values are redacted in any logged URL. */
const TOKEN_PARAMETER = /([?&](?:access_token|token|auth|authorization|api_?key|key|secret|password|session|sig|signature|code)=)[^&#\s"\\]+/gi;

/** A session token's shape (43 base64url characters, both letter cases) as a whole word. */
const TOKEN_WORD = /(?<![\w-])(?=[\w-]{0,42}[A-Z])(?=[\w-]{0,42}[a-z])[\w-]{43}(?![\w-])/g;

/** 13812345678 → 138****5678; anything else that looks like a number keeps its first 3 and last 4 characters. */
export function maskPhone(phone: string): string {
  if (phone.length <= 7) return '*'.repeat(phone.length);
  return `${phone.slice(0, 3)}${'*'.repeat(phone.length - 7)}${phone.slice(-4)}`;
}

/**
 * Masks every mobile number inside a text (URLs, messages, a JSON line): 139****5678, the country
 * prefix kept as written. A bare JSON number (`"n":13912345678`) becomes a string, so that the
 * line stays JSON.
 */
export function maskPhonesIn(text: string): string {
  return text.replace(PHONE_IN_TEXT, (match: string, prefix: string | undefined, first: string, last: string, offset: number) => {
    const masked = `${prefix ?? ''}${first}****${last}`;
    const bareNumber = /^[\d.]+$/.test(match) && ':,['.includes(text[offset - 1] ?? '') && ',}]'.includes(text[offset + match.length] ?? '');
    return bareNumber ? `"${masked}"` : masked;
  });
}

/** Phones masked, token query parameters and token-shaped words redacted: the last pass over every log line. */
export function maskSecrets(text: string): string {
  return maskPhonesIn(text).replace(TOKEN_PARAMETER, '$1[Redacted]').replace(TOKEN_WORD, '[Redacted]');
}

/** A pino destination that masks each line (`maskSecrets`) before handing it on. */
function maskingDestination(destination: DestinationStream): DestinationStream {
  const flushable = destination as DestinationStream & { flushSync?: () => void };
  return {
    write: (line: string) => destination.write(maskSecrets(line)),
    ...(flushable.flushSync ? { flushSync: () => flushable.flushSync?.() } : {}),
  };
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

/** Fastify's request line. */
function serializeRequest(request: FastifyRequest) {
  return { method: request.method, url: request.url, host: request.host, remoteAddress: request.ip, remotePort: request.socket?.remotePort };
}

/** The request line with phones and token parameters in the URL masked, for a transport (its lines skip the masking destination). */
function serializeMaskedRequest(request: FastifyRequest) {
  return { ...serializeRequest(request), url: maskSecrets(request.url) };
}

export type LoggerOptions = Exclude<FastifyServerOptions['logger'], boolean | undefined>;

/**
 * Pino options for the app: the given level/destination plus redaction and the masking destination
 * (stdout, the given stream or file). `false` stays false
 * (no logging at all). A pino `transport` runs in a worker thread and cannot be wrapped: lines
 * sent there get redaction and a request serializer that masks the URL only.
 */
export function secureLoggerOptions(options: FastifyServerOptions['logger'], level: string): FastifyServerOptions['logger'] {
  if (options === false) return false;
  const { file, ...base }: LoggerOptions & { file?: string } = options === undefined || options === true ? { level } : options;
  const destination = base.transport
    ? {}
    : { stream: maskingDestination(base.stream ?? pino.destination(file === undefined ? 1 : { dest: file, mkdir: true })) };
  return {
    ...base,
    ...destination,
    redact: { paths: REDACTED_PATHS, censor },
    // The masking destination masks the whole line, URL included; a transport has no such destination.
    serializers: { ...(base.serializers ?? {}), req: base.transport ? serializeMaskedRequest : serializeRequest },
  };
}
