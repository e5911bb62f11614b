import type { RedisClient } from '../../../infra/redis.js';
import type { SaleKeys } from '../keys.js';
import { readBuckets, soldOutBetween, type BucketReading } from './transfers.js';

/** How often an instance checks whether units came back to the vouchers it knows sold out. */
export const SOLD_OUT_POLL_MS = 250;

/**
 * The vouchers this instance knows are sold out, answered from memory: no Redis command, no
 * order id. Each flag carries the voucher's `restocks` version (its hash field; every script that
 * gives units back bumps it: release, control raising the stock, repair; publish sets a fresh one),
 * read together with a stock of 0 in one HMGET, so it is true at that instant. Every
 * SOLD_OUT_POLL_MS the instance reads the version of its flagged vouchers and drops a flag whose
 * version moved, whose stock is back or whose hash is gone: cleared on every instance within
 * ~0.3 s of units coming back, however they came back; the instance that brought them back
 * (the sale's `onUnitsBack`, sale-context.ts) drops its own flag at once.
 *
 * A voucher sold from B > 1 buckets (seckill-buckets.md) is flagged only when two rounds of
 * readings of every bucket find them all empty with nothing pending and no version moved
 * (transfers.ts `soldOutBetween`: sold out at an instant in between), with the vector of the
 * buckets' versions; the poll reads every bucket and drops the flag when any version moved or any
 * bucket holds or awaits units.
 */
export class SoldOutMemory {
  /** voucherId → its buckets' versions when flagged (one for a voucher of one bucket). */
  private readonly flags = new Map<string, { buckets: number; versions: string[] }>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: SaleKeys,
    private readonly onError: (error: unknown) => void = () => undefined,
    /** The B the instance routes a voucher by (BucketLayouts.routedBuckets); absent: every voucher has one bucket. */
    private readonly bucketsOf: (voucherId: string) => number = () => 1,
  ) {}

  known(voucherId: string): boolean {
    return this.flags.has(voucherId);
  }

  /** After a sold-out answer: flags the voucher if its stock is still 0, with its version. */
  async remember(voucherId: string): Promise<void> {
    const buckets = this.bucketsOf(voucherId);
    if (buckets > 1) {
      const first = await readBuckets(this.redis, this.keys, voucherId, buckets);
      if (!soldOutBetween(first, first)) return;
      const second = await readBuckets(this.redis, this.keys, voucherId, buckets);
      if (!soldOutBetween(first, second)) return;
      this.flags.set(voucherId, { buckets, versions: second.map((reading) => reading.version) });
      this.start();
      return;
    }
    const [stock, version] = await this.redis.hmget(this.keys.voucher(voucherId).voucher, 'stock', 'restocks');
    if (stock === null || Number(stock) > 0) return;
    this.flags.set(voucherId, { buckets: 1, versions: [version ?? ''] });
    // Polled from the first flag on, whoever built the sale: a flag is never left unchecked.
    this.start();
  }

  /**
   * This instance gave units back or reopened the sale (a release, an administrator's control, a
   * repair): its next order goes to Redis at once. Other instances drop theirs on their poll.
   */
  forget(voucherId: string): void {
    this.flags.delete(voucherId);
  }

  /** One round of the check: drops every flag whose voucher may have units again. */
  async refresh(): Promise<void> {
    const flagged = [...this.flags];
    const states = await Promise.all(flagged.map(([voucherId, { buckets }]) => this.readingsOf(voucherId, buckets)));
    flagged.forEach(([voucherId, { versions }], index) => {
      const readings = states[index]!;
      const moved =
        readings.some((reading) => !reading.exists || reading.stock > 0 || reading.pending > 0) ||
        readings.some((reading, at) => reading.version !== versions[at]);
      // A flag still current when read is kept; one changed meanwhile (forgotten, flagged again) is not this round's.
      if (moved && this.flags.get(voucherId)?.versions === versions) this.flags.delete(voucherId);
    });
  }

  private async readingsOf(voucherId: string, buckets: number): Promise<BucketReading[]> {
    if (buckets > 1) return readBuckets(this.redis, this.keys, voucherId, buckets);
    const [stock, version] = await this.redis.hmget(this.keys.voucher(voucherId).voucher, 'stock', 'restocks');
    return [{ exists: stock !== null, stock: Number(stock ?? 0), pending: 0, version: version ?? '' }];
  }

  private start(): void {
    if (this.timer) return;
    const tick = (): void => {
      const round = this.flags.size === 0 ? Promise.resolve() : this.refresh();
      round.catch(this.onError).finally(() => {
        if (this.timer) this.timer = setTimeout(tick, SOLD_OUT_POLL_MS).unref();
      });
    };
    this.timer = setTimeout(tick, SOLD_OUT_POLL_MS).unref();
  }

  /** Stops the polling (closing the sale); a later flag starts it again. */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
