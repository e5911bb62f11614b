import { Type } from 'typebox';
import { HTTP_MESSAGES } from './http-messages.js';

/**
 * A database id in a path or query: a positive decimal integer that fits BIGINT UNSIGNED.
 * Kept a string end to end: JavaScript numbers cannot hold every 64-bit id.
 */
const ID_PATTERN = '^[1-9][0-9]{0,18}$';
export const IdString = Type.String({
  pattern: ID_PATTERN,
  errorMessage: HTTP_MESSAGES.idFormat.texts,
});

export const IdParams = Type.Object({ id: IdString });

/**
 * An id in a JSON body: a string of digits (any id), or a number that is a safe integer (hmdp's
 * front end sends some ids as numbers). A larger number has already lost digits in JSON.parse
 * (9007199254740993 reads as …992), so it is refused with 400 rather than guessed. Handlers see
 * a string either way (`x-id-string`, src/http/validation.ts).
 */
export const IdBody = Type.Unsafe<string>({
  anyOf: [
    { type: 'string', pattern: ID_PATTERN },
    { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
  ],
  'x-id-string': true,
  errorMessage: HTTP_MESSAGES.idBodyFormat.texts,
});

/**
 * An instant in a JSON body: RFC 3339 with an explicit offset (a time without a zone is
 * ambiguous), that JavaScript can parse (no leap second) and DATETIME can store.
 */
export const Instant = Type.String({
  format: 'date-time',
  'x-instant': true,
  errorMessage: HTTP_MESSAGES.instantFormat.texts,
});

/** hmdp's `current`: a 1-based page number. */
export const Current = Type.Integer({ minimum: 1, maximum: 100_000, default: 1, errorMessage: HTTP_MESSAGES.pageNumber.texts });

/**
 * Marks a route for administrators only in its schema (`schema: { ...ADMIN_ONLY, body: … }`).
 * Only documentation: the handler still enforces it (requireAdmin). The abuse test checks that
 * a normal user is refused on every route so marked.
 */
export const ADMIN_ONLY = { 'x-admin-only': true } as const;
