import { render, type Message } from '../../../lib/messages/index.js';

/**
 * An error of the sale its user reads: `userMessage`, in both languages (`message` is its English
 * text, for logs). It says what happened, never how to answer it: the routes map each class to
 * its answer (../error-routes.ts).
 *
 * `routine`: an answer given many times a second under load ("sold out", "too many requests"),
 * made without a stack trace, the costliest part of an Error (2 % of the server's CPU in the
 * seckill benchmark's profile).
 */
export abstract class SeckillError extends Error {
  readonly userMessage: Message;

  constructor(userMessage: Message, routine = false) {
    const limit = Error.stackTraceLimit;
    if (routine) Error.stackTraceLimit = 0;
    super(render(userMessage, 'en'));
    Error.stackTraceLimit = limit;
    this.userMessage = userMessage;
    this.name = new.target.name;
  }
}

/** A request the sale refused before doing anything: no unit, no slot, no order taken. */
export abstract class Refusal extends SeckillError {}

/** A wait in whole seconds, at least one: what a refusal that asks to come back later tells. */
export const secondsToWait = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));
