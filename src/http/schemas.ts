import { Type, type TSchema } from 'typebox';
import { ID_PATTERN } from '../lib/wire/index.js';
import { HTTP_MESSAGES } from './http-messages.js';

/** A database id in a path or query (`ID_PATTERN`: a 64-bit id, kept a string end to end). */
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

const Wrapper = {
  success: Type.Boolean({ description: 'false for a refusal answered with 200 (e.g. a sold-out seckill voucher)' }),
  errorMsg: Type.Optional(Type.String({ description: 'the refusal, when success is false' })),
};

/**
 * A route's answer: hmdp's wrapper `{success, errorMsg, data, total}` (src/http/result.ts) with
 * `data` of this schema, absent when success is false. A route's `response: { 200: ResultOf(…) }`
 * is its documentation (the OpenAPI document and the web app's types generated from it) and types
 * its handler's return; app.ts writes every answer with stringifyResult, never from a response schema.
 */
export const ResultOf = <T extends TSchema>(data: T) =>
  Type.Object(
    {
      ...Wrapper,
      data: Type.Optional(data),
      total: Type.Optional(Type.Integer({ description: 'total count, for pages that have one' })),
    },
    { description: 'The result in the wrapper' },
  );

/** The answer of a route that answers no data (`ok()`). */
export const EmptyResult = Type.Object(Wrapper, { description: 'Done (no data)' });
