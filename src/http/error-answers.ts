import type { FastifyInstance } from 'fastify';
import type { Message } from '../lib/messages/index.js';
import { localize } from './language.js';
import { fail } from './result.js';

/** An error a module throws for its user to read: its message, in both languages. */
export interface ErrorWithMessage extends Error {
  readonly userMessage: Message;
}

/** How one class of a module's errors is answered: its status, and headers drawn from the error. */
export interface ErrorAnswer<E extends ErrorWithMessage = ErrorWithMessage> {
  readonly type: abstract new (...args: never[]) => E;
  readonly status: number;
  headers?(error: E): Record<string, string>;
}

/** One row of a table: errors of `type` (and its subclasses) are answered `status`, with `headers`. */
export const answer = <E extends ErrorWithMessage>(
  type: ErrorAnswer<E>['type'],
  status: number,
  headers?: (error: E) => Record<string, string>,
): ErrorAnswer => (headers ? { type, status, headers } : { type, status });

/** The row answering `error`: the first whose class `error` is an instance of (a subclass's row goes before its class's). */
export const answerOf = (table: readonly ErrorAnswer[], error: unknown): ErrorAnswer | undefined => table.find((row) => error instanceof row.type);

/**
 * Answers what the routes of `app` throw by a module's table: an error a row names gets the row's
 * status and headers and `{success: false, errorMsg}` in the request's language. Any other error
 * goes on to the app's error handler (error-handling.ts) untouched: a 500 unless it knows better.
 * Call it in the module's routes plugin before registering its routes, which then inherit it.
 */
export function answerErrors(app: FastifyInstance, table: readonly ErrorAnswer[]): void {
  app.setErrorHandler((error: Error, request, reply) => {
    const row = answerOf(table, error);
    if (row === undefined) throw error; // Fastify hands an error thrown here to the parent's handler
    const known = error as ErrorWithMessage;
    if (row.headers) void reply.headers(row.headers(known));
    void reply.code(row.status).send(fail(localize(request, known.userMessage)));
  });
}
