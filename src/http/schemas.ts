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

/**
 * C0 and C1 control characters and DEL (NUL, escape sequences, bells…), and lone surrogates (a
 * half of a UTF-16 pair, which JSON can write and MySQL would store as U+FFFD). No text a person
 * writes holds them.
 */
const CONTROLS = '\\u0000-\\u001F\\u007F-\\u009F\\p{Cs}';
/** The same but tab, line feed and carriage return, which a multi-line text keeps. */
const CONTROLS_BUT_LINE_BREAKS = '\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F\\p{Cs}';
/** A character that shows: not white space (ideographic space among it), control or invisible format character (zero-width space). */
const VISIBLE = `[^\\s${CONTROLS}\\p{Cf}]`;

/** What a text's refusal says, by its rules. */
const TEXT_MESSAGES = {
  oneLine: { required: HTTP_MESSAGES.textLine, mayBeEmpty: HTTP_MESSAGES.textLineMayBeEmpty },
  multiline: { required: HTTP_MESSAGES.textLines, mayBeEmpty: HTTP_MESSAGES.textLinesMayBeEmpty },
};

/**
 * A text a person writes (a title, a name, an address, a blog): no control character, on one line
 * unless `multiline` (line breaks and tabs allowed then); unless `mayBeEmpty`, at least one visible
 * character, so a title of spaces or of a zero-width space is refused. Ajv runs patterns with the
 * `u` flag, which `\p{Cf}` needs.
 */
export function Text({ maxLength, multiline = false, mayBeEmpty = false }: { maxLength: number; multiline?: boolean; mayBeEmpty?: boolean }) {
  const char = `[^${multiline ? CONTROLS_BUT_LINE_BREAKS : CONTROLS}]`;
  const message = TEXT_MESSAGES[multiline ? 'multiline' : 'oneLine'][mayBeEmpty ? 'mayBeEmpty' : 'required'];
  return Type.String({
    ...(mayBeEmpty ? {} : { minLength: 1 }),
    maxLength,
    // A lookahead finds the visible character: `^C*VC*$` would backtrack quadratically on a text ending in a control character (3.6 ms for 2 KB).
    pattern: mayBeEmpty ? `^${char}*$` : `^(?=[\\s\\S]*?${VISIBLE})${char}*$`,
    errorMessage: { pattern: message.texts },
  });
}

/** hmdp's `current`: a 1-based page number. */
export const Current = Type.Integer({ minimum: 1, maximum: 100_000, default: 1, errorMessage: HTTP_MESSAGES.pageNumber.texts });

/**
 * Marks a route for administrators only in its schema (`schema: { ...ADMIN_ONLY, body: … }`).
 * Only documentation: the handler still enforces it (requireAdmin). The abuse test checks that
 * a normal user is refused on every route so marked.
 */
export const ADMIN_ONLY = { 'x-admin-only': true } as const;

/** The Ajv keyword of ONLY_KNOWN_FIELDS (src/http/validation.ts). */
export const KNOWN_FIELDS = 'x-known-fields';

/**
 * A body that takes only the fields its schema names (`Type.Object(fields, ONLY_KNOWN_FIELDS)`):
 * any other is refused with 400 naming it and listing the schema's fields (src/http/validation.ts),
 * never dropped silently.
 */
export const ONLY_KNOWN_FIELDS = { [KNOWN_FIELDS]: true } as const;

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
