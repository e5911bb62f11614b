import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../../../infra/redis.js';
import type { BucketRef, SaleKeys } from '../keys.js';
import type { Operation } from '../../../lib/redis-scripts/index.js';
import type { SaleScripts } from './sale-scripts.js';

/**
 * Refills of a voucher sold from B > 1 buckets (issue 30): units move, users do not. A request
 * whose home bucket is empty takes units from the richest other bucket and gives them to its own,
 * in three one-slot steps keyed by a transfer id (lua/take.lua, transfer-in.lua, transfer-end.lua):
 *
 *   take   (donor)      stock −k, pending +k, the transfer recorded in the donor lane's `transfers`
 *   give   (recipient)  stock +k, restocks +1, the transfer's marker set to "given" (once)
 *   settle (donor)      the record dropped, pending −k
 *
 * A unit is always in some bucket's stock or pending, so a crash between the steps leaves it
 * late, never lost: the sweep finds the records older than TRANSFER_SWEEP_AFTER_MS, sets the
 * marker to "returned" unless the give happened (transfer-in.lua decides once, whichever comes
 * first), and settles the transfer or returns its units to the donor.
 */

/** Units a bucket's first refill moves at most (a donor always keeps half its stock, take.lua). */
export const REFILL_FIRST_UNITS = 64;
/** Each refill of a bucket within REFILL_STREAK_MS of its previous one may move twice as many, up to this. */
export const REFILL_MOST_UNITS = 4_096;
const REFILL_STREAK_MS = 1_000;
/** A transfer still recorded this long after its take is the sweep's (its refill died between steps); SECKILL_TRANSFER_SWEEP_AFTER_MS's default. */
export const TRANSFER_SWEEP_AFTER_MS = 10_000;
/** How long a request whose buckets are all empty waits for a pending transfer before it looks again. */
const PENDING_WAIT_MS = 20;

/** One bucket as read by one HMGET: stock, units it gave away and not yet settled, version (`restocks`). */
export interface BucketReading {
  exists: boolean;
  stock: number;
  pending: number;
  version: string;
}

/** A transfer taken and not yet settled, as its donor lane's `transfers` hash records it. */
export interface PendingTransfer {
  transferId: string;
  voucherId: string;
  from: number;
  to: number;
  of: number;
  units: number;
  takenMs: number;
}

/** A `transfers` record, "voucherId:from:of:to:units:takenMs" (take.lua). */
export function parseTransfer(transferId: string, record: string): PendingTransfer {
  const [voucherId = '', from, of, to, units, takenMs] = record.split(':');
  return { transferId, voucherId, from: Number(from), of: Number(of), to: Number(to), units: Number(units), takenMs: Number(takenMs) };
}

/** What a refill found: `retry` (units moved, or may be had: reserve again), or `sold-out` (decided below). */
export type RefillOutcome = 'retry' | 'sold-out';

/**
 * The three scripts a refill runs (sale-scripts.ts): straight on the shared connection, or each
 * followed by a WAIT for replicas when SECKILL_REPLICA_ACKS is on (acknowledged-reserve.ts).
 */
export type TransferSteps = {
  [K in 'take' | 'transferIn' | 'transferEnd']: SaleScripts[K] extends Operation<infer In, infer Out> ? (input: In) => Promise<Stepped<Out>> : never;
};

/**
 * A refill step's answer, and whether it is durable: on as many replicas as SECKILL_REPLICA_ACKS
 * asks (always, when it asks for none). A refill goes on to its next step only after a durable
 * one: a take its donor's replicas lack can vanish in a failover, and a give made after it would
 * then create units; a settle after a give the recipient's replicas lack would lose them. A step
 * that is not durable stands, and the refill stops there: its transfer stays recorded, and the
 * sweep ends it (a give it settles only once the recipient's replicas have it; the units wait in
 * the donor's pending meanwhile, so no sold out is decided).
 */
export interface Stepped<T> {
  value: T;
  durable: boolean;
}

/** The steps straight on the shared connection: nothing to wait for, every step durable as Redis is configured. */
export function unwaitedSteps(scripts: Pick<SaleScripts, 'take' | 'transferIn' | 'transferEnd'>): TransferSteps {
  return {
    take: async (input) => ({ value: await scripts.take(input), durable: true }),
    transferIn: async (input) => ({ value: await scripts.transferIn(input), durable: true }),
    transferEnd: async (input) => ({ value: await scripts.transferEnd(input), durable: true }),
  };
}

export const bucketsOf = (buckets: number): BucketRef[] => Array.from({ length: buckets }, (_, index) => ({ index, of: buckets }));

/** A bucket's share of units split over its voucher's buckets: ⌊S/B⌋, one more for the first S mod B (publish, a raise). */
export function shareOf(units: number, bucket: BucketRef): number {
  return Math.floor(units / bucket.of) + (bucket.index < units % bucket.of ? 1 : 0);
}

/** Each bucket of the voucher read on its own (B slots: B commands, in parallel, not one atomic read). */
export async function readBuckets(redis: RedisClient, keys: SaleKeys, voucherId: string, buckets: number): Promise<BucketReading[]> {
  const replies = await Promise.all(bucketsOf(buckets).map((bucket) => redis.hmget(keys.bucket(voucherId, bucket).voucher, 'stock', 'pending', 'restocks')));
  return replies.map(([stock, pending, version]) => ({
    exists: stock !== null,
    stock: Number(stock ?? 0),
    pending: Number(pending ?? 0),
    version: version ?? '',
  }));
}

/**
 * Sold out across buckets, from two rounds of readings (the second begun after the first ended):
 * true when every bucket read empty (stock 0, nothing pending) in both and no bucket's version
 * moved between its two readings. Why that is race-free: a bucket's stock + pending only rises by
 * a step that bumps its version (a give, a transfer returned, a release, a raise, a repair; a
 * take moves stock to pending inside one bucket), so a bucket empty at both readings with one
 * version stayed empty between them. Every bucket's interval contains the instant the second
 * round began, so at that instant every bucket held nothing; and a unit on its way between
 * buckets is in its donor's pending until its recipient has it. So at that instant no unit was
 * left anywhere: the voucher was sold out, and only a version bump can change that.
 */
export function soldOutBetween(first: readonly BucketReading[], second: readonly BucketReading[]): boolean {
  const empty = (reading: BucketReading): boolean => reading.exists && reading.stock <= 0 && reading.pending <= 0;
  return (
    first.length === second.length && first.every((reading, index) => empty(reading) && empty(second[index]!) && reading.version === second[index]!.version)
  );
}

/**
 * How many units a bucket's next refill may move. Under skewed buyers one bucket drains again and
 * again: every order that waited on a refill retries at once, and a refill of 64 serves 64 of
 * them while the rest find the bucket empty and wait for the next one. So a bucket refilled again
 * within REFILL_STREAK_MS doubles its refill (slow start, as TCP's window), up to
 * REFILL_MOST_UNITS; a bucket left alone that long starts again from REFILL_FIRST_UNITS.
 */
export class RefillSizes {
  private readonly last = new Map<string, { units: number; at: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  next(bucketKey: string): number {
    const now = this.now();
    const last = this.last.get(bucketKey);
    const units = last !== undefined && now - last.at < REFILL_STREAK_MS ? Math.min(2 * last.units, REFILL_MOST_UNITS) : REFILL_FIRST_UNITS;
    if (this.last.size >= 10_000) this.forgetBefore(now - REFILL_STREAK_MS);
    this.last.set(bucketKey, { units, at: now });
    return units;
  }

  private forgetBefore(time: number): void {
    for (const [key, { at }] of this.last) if (at < time) this.last.delete(key);
  }
}

export class BucketTransfers {
  /** One refill out per (voucher, bucket) in this instance: the requests that find the bucket empty meanwhile wait for it. */
  private readonly refilling = new Map<string, Promise<RefillOutcome>>();
  private readonly sizes = new RefillSizes();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: SaleKeys,
    private readonly scripts: TransferSteps,
  ) {}

  /** After the home bucket answered empty: units moved to it, or a reason to look again, or sold out. */
  refill(voucherId: string, home: BucketRef): Promise<RefillOutcome> {
    const key = `${voucherId}:${home.index}:${home.of}`;
    let running = this.refilling.get(key);
    if (!running) {
      running = this.refillOnce(voucherId, home, key).finally(() => this.refilling.delete(key));
      this.refilling.set(key, running);
    }
    return running;
  }

  private async refillOnce(voucherId: string, home: BucketRef, key: string): Promise<RefillOutcome> {
    const first = await readBuckets(this.redis, this.keys, voucherId, home.of);
    if (first[home.index]!.stock > 0) return 'retry';
    const donor = richest(first, home.index);
    if (donor !== undefined) {
      await this.move(voucherId, { index: donor, of: home.of }, home, this.sizes.next(key));
      return 'retry';
    }
    if (first.some((reading) => reading.pending > 0)) {
      // Units on their way (or a dead refill's, until the sweep returns them): not sold out.
      await new Promise((resolve) => setTimeout(resolve, PENDING_WAIT_MS));
      return 'retry';
    }
    const second = await readBuckets(this.redis, this.keys, voucherId, home.of);
    return soldOutBetween(first, second) ? 'sold-out' : 'retry';
  }

  /** take, give, settle (or return, when the recipient refused them); the units given, 0 if none. */
  async move(voucherId: string, donor: BucketRef, recipient: BucketRef, most = REFILL_FIRST_UNITS): Promise<number> {
    const transferId = randomUUID();
    const take = await this.scripts.take({ voucherId, bucket: donor, transferId, to: recipient.index, most });
    const units = take.value;
    if (units === 0 || !take.durable) return 0; // not durable: the sweep ends the transfer (Stepped)
    const give = await this.scripts.transferIn({ voucherId, bucket: recipient, transferId, mode: 'give', units });
    if (give.durable) await this.scripts.transferEnd({ voucherId, bucket: donor, transferId, mode: give.value ? 'settle' : 'return' });
    return give.value ? units : 0;
  }

  /**
   * A take with no give after it: the state a refill leaves when its instance dies between its
   * first two steps. The fault scenarios (bench/faults/buckets/) strand units this way, with
   * no timing luck; the units stay pending in the donor until the sweep returns them. The units taken.
   */
  async takeAndAbandon(voucherId: string, donor: BucketRef, recipient: BucketRef, most = REFILL_MOST_UNITS): Promise<number> {
    return (await this.scripts.take({ voucherId, bucket: donor, transferId: randomUUID(), to: recipient.index, most })).value;
  }

  /**
   * Ends every transfer recorded longer than `olderThanMs` ago (Redis time): its units stay in the
   * recipient if they got there, else go back to the donor. Returns how many transfers it ended.
   */
  async sweep(olderThanMs = TRANSFER_SWEEP_AFTER_MS): Promise<number> {
    const lanes = this.keys.laneShards();
    if (lanes.length === 0) return 0;
    const [seconds, micros] = await this.redis.time();
    const nowMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    let ended = 0;
    for (const lane of lanes) {
      for (const transfer of await this.recordedIn(lane)) {
        if (nowMs - transfer.takenMs < olderThanMs) continue;
        if (await this.end(transfer)) ended += 1;
      }
    }
    return ended;
  }

  /**
   * Ends every transfer of the voucher's buckets, however young, as the sweep would: for a repair,
   * once every bucket is frozen (a frozen bucket gives none: take.lua), so none is left under way
   * while it counts the units. False when one could not be ended durably (its replicas lag): the
   * repair must not count units then.
   */
  async endAllOf(voucherId: string, buckets: number): Promise<boolean> {
    const lanes = new Set(bucketsOf(buckets).map((bucket) => this.keys.laneShard(bucket)));
    let all = true;
    for (const lane of lanes) {
      for (const transfer of await this.recordedIn(lane)) {
        if (transfer.voucherId !== voucherId || transfer.of !== buckets) continue;
        all = (await this.end(transfer)) && all;
      }
    }
    return all;
  }

  /** Whether each transfer's units reached its recipient (its marker says "given"; absent or "returned": not). */
  async given(transfers: readonly PendingTransfer[]): Promise<Set<string>> {
    const markers = await Promise.all(
      transfers.map((transfer) => this.redis.get(this.keys.transferMarker({ index: transfer.to, of: transfer.of }, transfer.transferId))),
    );
    return new Set(transfers.filter((_, index) => markers[index] === 'given').map((transfer) => transfer.transferId));
  }

  private async recordedIn(lane: number): Promise<PendingTransfer[]> {
    const records = await this.redis.hgetall(this.keys.transfers(lane));
    return Object.entries(records).map(([transferId, record]) => parseTransfer(transferId, record));
  }

  /**
   * The units stay in the recipient if they got there, else go back to the donor (one decision per
   * transfer: transfer-in.lua). False when they got there but the recipient's replicas lack the
   * give: settling then would lose them in a failover of its master, so the transfer waits for the
   * next sweep. A return needs no such wait: a transfer is swept only long after its refill's
   * request ended, so no give can come for it any more, whatever a failover keeps of its marker.
   */
  private async end({ voucherId, transferId, from, to, of, units }: PendingTransfer): Promise<boolean> {
    const given = await this.scripts.transferIn({ voucherId, bucket: { index: to, of }, transferId, mode: 'refuse', units });
    if (given.value && !given.durable) return false;
    await this.scripts.transferEnd({ voucherId, bucket: { index: from, of }, transferId, mode: given.value ? 'settle' : 'return' });
    return true;
  }

  /** Sweeps every `everyMs` the transfers older than `olderThanMs` until stopped (the instances running the sale's jobs). */
  startSweeping(everyMs: number, olderThanMs: number, onError: (error: unknown) => void): void {
    if (this.timer || this.keys.laneShards().length === 0) return;
    const tick = (): void => {
      this.sweep(olderThanMs)
        .catch(onError)
        .finally(() => {
          if (this.timer) this.timer = setTimeout(tick, everyMs).unref();
        });
    };
    this.timer = setTimeout(tick, everyMs).unref();
  }

  stopSweeping(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** The other bucket with the most stock, if any has some. */
function richest(readings: readonly BucketReading[], except: number): number | undefined {
  let best: number | undefined;
  readings.forEach((reading, index) => {
    if (index !== except && reading.stock > 0 && (best === undefined || reading.stock > readings[best]!.stock)) best = index;
  });
  return best;
}
