import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify';
import { isTransient, unavailableDependency } from '../infra/transient-errors.js';
import { RETRY_AFTER_SECONDS } from './deadline.js';
import { HttpError } from './errors.js';
import { Refusal, retryAfterSeconds, type RefusalKind } from '../lib/refusals/index.js';
import { HTTP_MESSAGES, VALIDATION_MESSAGES } from './http-messages.js';
import { localize, negotiateLanguage } from './language.js';
import { render, type Language, type Message, type MessageTexts } from '../lib/messages/index.js';
import { KNOWN_FIELDS } from './schemas.js';
import { AJV_KEYWORDS, type UnknownFieldsParams } from './validation.js';
import { hasOverlongSegment } from './request-target.js';
import { fail } from './result.js';

/**
 * Turns schema failures into one sentence naming the field: `body.code must match pattern "^\d{6}$"`
 * (English; the error handler writes it again in the request's language from the same errors).
 */
export function formatValidationErrors(errors: FastifySchemaValidationError[], dataVar: string): Error {
  return new Error(validationMessage(errors, dataVar, 'en'));
}

/**
 * The failures in `language`, `; `-separated. A schema may carry `errorMessage: {en, zh}` to say
 * it in the user's terms instead of the validator's (or `{keyword: {en, zh}}` for one keyword).
 */
export function validationMessage(errors: FastifySchemaValidationError[], dataVar: string, language: Language): string {
  return withoutBranchErrors(errors)
    .map((error) => render(describeFailure(error, dataVar, language), language))
    .join('; ');
}

function describeFailure(error: FastifySchemaValidationError, dataVar: string, language: Language): Message {
  const params = error.params;
  const field = `${dataVar}${error.instancePath.replace(/\//g, '.')}`;
  if (error.keyword === 'required') return VALIDATION_MESSAGES.required({ field: `${field}.${String(params.missingProperty)}` });
  if (error.keyword === KNOWN_FIELDS) return unknownFieldsMessage(field, params as unknown as UnknownFieldsParams);
  const custom = customText((error as { parentSchema?: { errorMessage?: unknown } }).parentSchema?.errorMessage, error.keyword);
  if (custom) return VALIDATION_MESSAGES.custom({ field, text: custom[language] });
  const text = error.message ?? 'is invalid';
  const limit = String(params.limit);
  switch (error.keyword) {
    case 'type':
      return VALIDATION_MESSAGES.type({ field, text, type: String(params.type) });
    case 'minimum':
    case 'exclusiveMinimum':
      return VALIDATION_MESSAGES.tooSmall({ field, text, limit });
    case 'maximum':
    case 'exclusiveMaximum':
      return VALIDATION_MESSAGES.tooLarge({ field, text, limit });
    case 'minLength':
      return VALIDATION_MESSAGES.tooShort({ field, text, limit });
    case 'maxLength':
      return VALIDATION_MESSAGES.tooLong({ field, text, limit });
    case 'additionalProperties':
      return VALIDATION_MESSAGES.unknownProperty({ field, text, property: String(params.additionalProperty) });
    case 'enum':
    case 'const':
      return VALIDATION_MESSAGES.enumValue({ field, text });
    default:
      return VALIDATION_MESSAGES.invalid({ field, text });
  }
}

/** Unknown fields named in a refusal, and the length of each name: a hostile body of a thousand long names is not echoed whole. */
const NAMED_FIELDS = 5;
const NAME_LENGTH = 40;

/** `x-known-fields`: the unknown fields by their paths (in English; bare in Chinese), and the fields the schema takes. */
function unknownFieldsMessage(field: string, { unknown, known }: UnknownFieldsParams): Message {
  const named = unknown.slice(0, NAMED_FIELDS).map((name) => (name.length > NAME_LENGTH ? `${name.slice(0, NAME_LENGTH)}…` : name));
  const params = { field, unknown: named.join(', '), known: known.join(', ') };
  const paths = named.map((name) => `${field}.${name}`);
  if (unknown.length === 1) return VALIDATION_MESSAGES.unknownField({ ...params, fields: paths[0]! });
  if (unknown.length === named.length) return VALIDATION_MESSAGES.unknownFields({ ...params, fields: inWords(paths) });
  return VALIDATION_MESSAGES.someUnknownFields({ ...params, fields: paths.join(', '), others: unknown.length - named.length, count: unknown.length });
}

/** `a`, `a and b`, `a, b and c`. */
const inWords = (names: string[]): string => (names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names.at(-1)!}`);

/** A schema's `errorMessage`: both texts, for every keyword or for this one. */
function customText(errorMessage: unknown, keyword: string): MessageTexts | undefined {
  if (isTexts(errorMessage)) return errorMessage;
  const forKeyword = (errorMessage as Record<string, unknown> | undefined)?.[keyword];
  return isTexts(forKeyword) ? forKeyword : undefined;
}

export const isTexts = (value: unknown): value is MessageTexts =>
  typeof (value as MessageTexts | undefined)?.en === 'string' && typeof (value as MessageTexts | undefined)?.zh === 'string';

/**
 * When an `anyOf` fails, Ajv reports each branch's failure and then the `anyOf` itself: keep only
 * the latter, whose schema says what was expected as a whole (IdBody: a string of digits or a
 * safe integer), rather than "must be string; must be >= 1".
 */
function withoutBranchErrors(errors: FastifySchemaValidationError[]): FastifySchemaValidationError[] {
  const branches = errors.filter((error) => error.keyword === 'anyOf' || error.keyword === 'oneOf').map((error) => `${error.schemaPath}/`);
  return errors.filter((error) => !branches.some((branch) => error.schemaPath.startsWith(branch)));
}

/**
 * Ajv options: keep `errorMessage` as a known annotation, add the app's keywords (src/http/validation.ts)
 * and hand the failing schema to the formatter. JSON bodies are validated without coercion
 * (`validatorPerHttpPart`).
 *
 * `strictNumbers: false` on purpose. With Fastify's `coerceTypes` and Ajv's default strict numbers,
 * a query value such as `1e309` or `Infinity` is coerced to Infinity without the finiteness check,
 * and `minimum`/`maximum` are then skipped for non-finite numbers, so `?current=1e309` reached the
 * SQL as `OFFSET Infinity` (a 500; ajv-validator/ajv#2212, fastify/fastify#6718). Without strict
 * numbers the bounds apply to Infinity and reject it, so every number in a schema needs a
 * `minimum` and a `maximum` (test/integration/http/abuse checks both).
 */
export const ajvOptions = {
  customOptions: { keywords: AJV_KEYWORDS, verbose: true, allErrors: false, strictNumbers: false },
};

/**
 * Fastify's router errors, answered in the wrapper with a short message (the default body
 * echoes the whole URL and has another shape).
 */
export function frameworkErrors(fallback: Language) {
  const messages: Record<string, [number, Message]> = {
    FST_ERR_BAD_URL: [400, HTTP_MESSAGES.malformedUrl()],
    FST_ERR_MAX_PARAM_LENGTH: [414, HTTP_MESSAGES.paramTooLong()],
  };
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    const [status, message] = messages[error.code] ?? [error.statusCode ?? 400, HTTP_MESSAGES.badRequest({ detail: error.message })];
    // Before routing: the request is not yet the decorated one (no request.language).
    void reply.code(status).send(fail(render(message, negotiateLanguage(request.headers, fallback))));
  };
}

/**
 * Requests Node's HTTP parser rejects before Fastify sees them (garbage, headers over the size
 * limit, Content-Length with Transfer-Encoding, a timeout): answered in the wrapper like the rest,
 * in the default language (no header was read), then the connection is closed (Fastify's default
 * handler does the same with another body).
 */
export function clientErrorHandler(language: Language) {
  return function (this: FastifyInstance, error: Error & { code?: string }, socket: Duplex): void {
    answerClientError(this, error, socket, language);
  };
}

function answerClientError(app: FastifyInstance, error: Error & { code?: string }, socket: Duplex, language: Language): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, HTTP_MESSAGES.requestTimeout()]
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, HTTP_MESSAGES.headersTooLarge()]
        : [400, HTTP_MESSAGES.malformedRequest()];
  app.log.trace({ err: error }, 'client error');
  if (socket.writable) {
    const body = JSON.stringify(fail(render(message, language)));
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]!}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/** The answer to each kind of the domain's refusals (src/lib/refusals). */
const REFUSAL_STATUS: Record<RefusalKind, number> = {
  invalid: 400,
  unauthenticated: 401,
  forbidden: 403,
  'not-found': 404,
  conflict: 409,
  'too-large': 413,
  'rate-limited': 429,
  unavailable: 503,
};

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | HttpError | Refusal, request, reply) => {
    if (error instanceof HttpError) {
      return reply
        .code(error.statusCode)
        .headers(error.headers)
        .send(fail(localize(request, error.userMessage)));
    }
    if (error instanceof Refusal) {
      if (error.retryAfterMs !== undefined) void reply.header('retry-after', String(retryAfterSeconds(error.retryAfterMs)));
      return reply.code(REFUSAL_STATUS[error.kind]).send(fail(localize(request, error.userMessage)));
    }
    if (error.validation) {
      const message = request.language === 'en' ? error.message : validationMessage(error.validation, error.validationContext ?? 'request', request.language);
      return reply.code(400).send(fail(message));
    }
    // Fastify's own client errors: malformed JSON, unsupported media type, body too large...
    if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
      return reply.code(error.statusCode).send(fail(localize(request, clientErrorMessage(error, error.statusCode))));
    }
    if (isTransient(error)) {
      // Redis or MySQL is unreachable or busy: the client may simply retry. The answer names the
      // dependency (not its address: that stays in the log).
      request.log.warn({ err: error }, 'dependency unavailable');
      const unavailable = unavailableDependency(error);
      const requestId = request.id;
      const message = unavailable
        ? (unavailable.stalled ? HTTP_MESSAGES.dependencyStalled : HTTP_MESSAGES.dependencyUnreachable)({ dependency: unavailable.dependency, requestId })
        : HTTP_MESSAGES.serviceUnavailable({ requestId });
      return reply
        .code(503)
        .header('retry-after', String(RETRY_AFTER_SECONDS))
        .send(fail(localize(request, message)));
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply.code(500).send(fail(localize(request, HTTP_MESSAGES.internalError({ requestId: request.id }))));
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!;
    if (hasOverlongSegment(path)) return reply.code(414).send(fail(localize(request, HTTP_MESSAGES.paramTooLong())));
    return reply.code(404).send(fail(localize(request, HTTP_MESSAGES.routeNotFound({ method: request.method, path }))));
  });
}

/**
 * Fastify's own 4xx and its plugins' (a static file's 403): the English text keeps their message,
 * the Chinese one says the same without it, so that each answer is in one language.
 */
function clientErrorMessage(error: FastifyError, status: number): Message {
  const detail = error.message;
  if (error instanceof SyntaxError) return HTTP_MESSAGES.invalidJson({ detail }); // JSON.parse of the body
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return HTTP_MESSAGES.bodyTooLarge({ detail });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return HTTP_MESSAGES.unsupportedMediaType({ detail });
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return HTTP_MESSAGES.invalidJson({ detail });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return HTTP_MESSAGES.bodyLengthMismatch({ detail });
  }
  if (status === 403) return HTTP_MESSAGES.forbiddenPath(); // @fastify/static: a traversal or a dotfile
  return status === 400 ? HTTP_MESSAGES.badRequest({ detail }) : HTTP_MESSAGES.clientError({ detail, status });
}
