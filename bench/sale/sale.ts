/**
 * The sale as the load generators send it: vouchers with `stock` units each, offered one after
 * the other to all users: request i is user i mod U buying voucher ⌊i / U⌋. So each voucher sees U
 * buyers at once for `stock` units (sold out part-way: the oversell boundary is crossed under full
 * concurrency), and a user never asks twice for one voucher until every voucher made for the run
 * has been offered (then the offers wrap round and the answer is "already bought").
 */
import { REFUSALS } from '../../src/modules/seckill/index.js';
import type { BenchUser, RequestSource, RequestTiming, SentRequest } from '../harness/index.js';
import { SoldOutLedger } from './sold-out-ledger.js';

/** Requests of the sale and what their answers said. */
export class Sale implements RequestSource {
  readonly method = 'POST' as const;
  /** Order ids answered with success: true. */
  readonly accepted = new Set<string>();
  readonly refused: Record<string, number> = {};
  /** Answers that were not the API's {success, …} JSON (status and first bytes), counted. */
  readonly unexpected: Record<string, number> = {};
  /** What each voucher's buyers were told, and when (the sold-out checks). */
  readonly ledger = new SoldOutLedger();
  /** Each voucher's `restocks` version before the load (readVersions): how many units came back during it. */
  versionsBefore: ReadonlyMap<string, number> | undefined;
  /** The voucher of each request sent and when it went out, until its answer comes. */
  private readonly sent = new WeakMap<SentRequest, { voucher: string; sentAt: number }>();
  private index = 0;

  constructor(
    readonly vouchers: readonly string[],
    private readonly users: readonly BenchUser[],
    private readonly pathOf: (voucher: string) => string = (voucher) => `/api/voucher-order/seckill/${voucher}`,
    /** A gated sale: the purchase token of each request (the X-Purchase-Token header). */
    private readonly tokenOf?: (user: BenchUser, voucher: string) => string,
  ) {}

  next() {
    const users = this.users;
    const user = users[this.index % users.length]!;
    const voucher = this.vouchers[Math.floor(this.index / users.length) % this.vouchers.length]!;
    this.index += 1;
    const headers: { authorization: string; 'x-purchase-token'?: string } = { authorization: user.token };
    if (this.tokenOf) headers['x-purchase-token'] = this.tokenOf(user, voucher);
    const request = { path: this.pathOf(voucher), headers };
    // The load generators send a request as soon as next() returns it.
    this.sent.set(request, { voucher, sentAt: performance.now() });
    return request;
  }

  onResponse(status: number, body: string, _timing?: RequestTiming, request?: SentRequest): void {
    const sent = request && this.sent.get(request);
    const accepted = /^\{"success":true,"data":"(\d+)"/.exec(body);
    if (status === 200 && accepted) {
      this.accepted.add(accepted[1]!);
      if (sent) this.ledger.answered(sent.voucher, 'accepted', sent.sentAt);
      return;
    }
    const refusal = /"errorMsg":"([^"]*)"/.exec(body);
    if (sent) this.ledger.answered(sent.voucher, status === 200 && refusal?.[1] === REFUSALS.soldOut ? 'sold-out' : 'other', sent.sentAt);
    const key = refusal ? `${status} ${refusal[1]!}` : `${status} ${body.slice(0, 60)}`;
    const bucket = status === 200 && refusal ? this.refused : this.unexpected;
    bucket[key] = (bucket[key] ?? 0) + 1;
  }
}
