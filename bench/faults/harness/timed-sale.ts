/** The sale of a fault run, spread over the instances: each request with its Idempotency-Key, retried as a client would. */
import type { RequestTiming } from '../../harness/index.js';
import { Sale } from '../../sale/index.js';

/** An order request with its Idempotency-Key. */
interface KeyedRequest {
  path: string;
  headers: { authorization: string; 'idempotency-key': string };
}

/** The sale's requests and answers, plus when each success came (ms, performance.now()). */
export class TimedSale extends Sale {
  readonly acceptedAt: number[] = [];
  /** Order ids answered per Idempotency-Key: more than one for a key would be a retry's second order. */
  readonly idsByKey = new Map<string, Set<string>>();
  /** Requests sent again (after a 5xx or no answer), and those that then got an order id. */
  retried = 0;
  recovered = 0;
  private readonly retries: KeyedRequest[] = [];
  private readonly attempts = new Map<string, number>();
  private sequence = 0;
  /** Unique per run, so keys never meet another run's in Redis (24 h). */
  private readonly keyPrefix = `f${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;

  /** Each new request carries its own Idempotency-Key; a request to retry goes first, with its key. */
  override next(): KeyedRequest {
    const retry = this.retries.shift();
    if (retry) {
      this.retried += 1;
      return retry;
    }
    const request = super.next();
    return { path: request.path, headers: { ...request.headers, 'idempotency-key': `${this.keyPrefix}-${(this.sequence += 1)}` } };
  }

  override onResponse(status: number, body: string, timing?: RequestTiming): void {
    const before = this.accepted.size;
    super.onResponse(status, body);
    if (this.accepted.size > before) this.acceptedAt.push(performance.now());
    const key = timing?.request?.headers?.['idempotency-key'];
    if (key === undefined) return;
    const accepted = /^\{"success":true,"data":"(\d+)"/.exec(body);
    if (status === 200 && accepted) {
      const ids = this.idsByKey.get(key) ?? new Set<string>();
      ids.add(accepted[1]!);
      this.idsByKey.set(key, ids);
      if ((this.attempts.get(key) ?? 1) > 1) this.recovered += 1;
    } else if (status >= 500) this.retryLater(timing);
  }

  onNoAnswer(timing: RequestTiming): void {
    this.retryLater(timing);
  }

  /** Keys that got more than one order id: 0 when every retry returned its first order. */
  keysWithTwoOrders(): number {
    return [...this.idsByKey.values()].filter((ids) => ids.size > 1).length;
  }

  /** A 5xx or no answer: the outcome may be unknown, so the client retries with the same key (3 attempts in all). */
  private retryLater(timing: RequestTiming | undefined): void {
    const request = timing?.request;
    const authorization = request?.headers?.authorization;
    const key = request?.headers?.['idempotency-key'];
    if (request === undefined || authorization === undefined || key === undefined) return;
    const attempts = (this.attempts.get(key) ?? 1) + 1;
    if (attempts > 3) return;
    this.attempts.set(key, attempts);
    this.retries.push({ path: request.path, headers: { authorization, 'idempotency-key': key } });
  }

  acceptedBetween(from: number, to: number): number {
    return this.acceptedAt.filter((at) => at >= from && at < to).length;
  }
}
