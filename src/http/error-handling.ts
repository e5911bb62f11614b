import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify';
import { isTransient, unavailableDependency } from '../infra/transient-errors.js';
import { RETRY_AFTER_SECONDS } from './deadline.js';
import { HttpError } from './errors.js';
import { AJV_KEYWORDS } from './validation.js';
import { fail } from './result.js';

/**
 * Turns schema failures into one sentence naming the field: `body.code must match pattern "^\d{6}$"`.
 * A schema may carry `errorMessage` to say it in the user's terms instead of the validator's.
 */
export function formatValidationErrors(errors: FastifySchemaValidationError[], dataVar: string): Error {
  const messages = withoutBranchErrors(errors).map((error) => {
    const params = error.params;
    if (error.keyword === 'required') return `${dataVar}.${String(params.missingProperty)} is required`;
    const field = `${dataVar}${error.instancePath.replace(/\//g, '.')}`;
    const custom = (error as { parentSchema?: { errorMessage?: unknown } }).parentSchema?.errorMessage;
    return `${field} ${typeof custom === 'string' ? custom : (error.message ?? 'is invalid')}`;
  });
  return new Error(messages.join('; '));
}

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
export function frameworkErrors(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const messages: Record<string, [number, string]> = {
    FST_ERR_BAD_URL: [400, 'The URL is malformed (bad percent-encoding)'],
    FST_ERR_MAX_PARAM_LENGTH: [414, 'A path parameter is too long'],
  };
  const [status, message] = messages[error.code] ?? [error.statusCode ?? 400, error.message];
  void reply.code(status).send(fail(message));
}

/**
 * Requests Node's HTTP parser rejects before Fastify sees them (garbage, headers over the size
 * limit, Content-Length with Transfer-Encoding, a timeout): answered in the wrapper like the rest,
 * then the connection is closed (Fastify's default handler does the same with another body).
 */
export function clientErrorHandler(this: FastifyInstance, error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'The request took too long to arrive']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'The request headers are too large']
        : [400, 'Malformed HTTP request'];
  this.log.trace({ err: error }, 'client error');
  if (socket.writable) {
    const body = JSON.stringify(fail(message));
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]!}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | HttpError, request, reply) => {
    if (error instanceof HttpError) {
      return reply.code(error.statusCode).headers(error.headers).send(fail(error.message));
    }
    if (error.validation) return reply.code(400).send(fail(error.message));
    // Fastify's own client errors: malformed JSON, unsupported media type, body too large...
    if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
      return reply.code(error.statusCode).send(fail(error.message));
    }
    if (isTransient(error)) {
      // Redis or MySQL is unreachable or busy: the client may simply retry. The answer names the
      // dependency (not its address: that stays in the log).
      request.log.warn({ err: error }, 'dependency unavailable');
      const unavailable = unavailableDependency(error);
      const what = unavailable
        ? `${unavailable.dependency} ${unavailable.stalled ? 'is not answering in time' : 'is unreachable'}`
        : 'Service temporarily unavailable';
      return reply
        .code(503)
        .header('retry-after', String(RETRY_AFTER_SECONDS))
        .send(fail(`${what}, please retry (request id ${request.id})`));
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply.code(500).send(fail(`Internal server error (request id ${request.id})`));
  });

  app.setNotFoundHandler((request, reply) => {
    return reply.code(404).send(fail(`No route for ${request.method} ${request.url.split('?')[0]!}`));
  });
}
