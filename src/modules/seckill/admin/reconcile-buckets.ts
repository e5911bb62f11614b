import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { homeBucket, type BucketRef } from '../keys.js';
import type { Sale } from '../sale/sale.js';
import type { BucketSnapshot } from '../sale/sale-snapshots.js';
import { bucketsOf, shareOf, type PendingTransfer } from '../sale/transfers.js';
import type { MysqlSnapshot, PendingTransferReport, RepairResult, SeckillRow, VoucherDrift } from './reconcile-report.js';

/**
 * The reconciliation of a voucher sold from B > 1 buckets (docs/flows/reconciliation.md#buckets).
 * Redis must hold, summed over the buckets, the units MySQL's stock leaves once the queued and
 * unreleased orders are taken off; a unit in a transfer counts once: in its donor's `pending`
 * until its recipient has it (marker "given"), then in the recipient's stock. Each user's slots
 * must be in the user's home bucket, and in no other.
 *
 * A check reads each bucket atomically but the buckets one after another, so a refill between two
 * reads can show as transient drift (checked again, as for one bucket). A repair is exact: it
 * freezes every bucket (reserve.lua answers "frozen", and a frozen bucket gives no units away:
 * take.lua), lets the worker drain the lanes, ends every transfer of the voucher as the sweep
 * would, then reads MySQL and each bucket's stock with its release markers, and moves the stock of
 * the buckets by the difference (repair-bucket.lua), rewriting each bucket's buyers in the same step.
 */

/** What a bucketed comparison needs besides the sale's parts: MySQL's view and the drain's question. */
export interface BucketMysql {
  read(voucherId: string, queuedIds: string[]): Promise<MysqlSnapshot>;
  written(orderIds: string[]): Promise<Set<string>>;
}

/** All buckets of a voucher, each read atomically (not together), with the transfers' outcomes. */
interface BucketsRead {
  buckets: BucketSnapshot[];
  /** Transfers of the voucher not yet settled, and which of them reached their recipient. */
  transfers: PendingTransfer[];
  given: Set<string>;
}

const DRAIN_POLL_MS = 50;
const FREEZE_MARGIN_MS = 30_000;
const REPAIR_ATTEMPTS = 3;

export class BucketReconciler {
  constructor(
    private readonly sale: Pick<Sale, 'snapshots' | 'administration' | 'publisher' | 'transfers'>,
    private readonly mysql: BucketMysql,
    private readonly drainTimeoutMs: number,
  ) {}

  /** One snapshot comparison: Redis (every bucket), then MySQL, then the release markers of MySQL's unreleased orders. */
  async compareOnce(voucher: SeckillRow, buckets: number): Promise<{ drift: VoucherDrift | null; transfers: PendingTransferReport[] }> {
    const redis = await this.readBuckets(voucher.voucherId, buckets);
    const mysql = await this.mysql.read(voucher.voucherId, queuedIdsOf(redis.buckets));
    const released = await this.releasedOf(voucher.voucherId, buckets, mysql);
    const drift = compareBuckets(voucher, buckets, redis, mysql, released);
    return { drift, transfers: redis.transfers.map((transfer) => reportOf(transfer, redis.given)) };
  }

  /**
   * Freeze every bucket → drain the lanes → end the transfers → read MySQL, then each bucket with
   * its markers → move each bucket's stock and rewrite its buyers → thaw; again when a
   * cancellation committed in MySQL meanwhile (its release may have raced the reads).
   */
  async repair(voucher: SeckillRow, buckets: number): Promise<RepairResult> {
    let lastDrift: VoucherDrift | null = null;
    for (let attempt = 0; attempt < REPAIR_ATTEMPTS; attempt += 1) {
      const token = randomBytes(8).toString('hex');
      await this.sale.administration.freezeBuckets(voucher, buckets, token, this.drainTimeoutMs + FREEZE_MARGIN_MS);
      const round = await this.repairFrozen(voucher, buckets, token).catch(async (error: unknown) => {
        await this.sale.administration.thawBuckets(voucher.voucherId, buckets, token);
        throw error;
      });
      lastDrift = round.drift ?? lastDrift;
      if (round.skipped !== undefined) {
        await this.sale.administration.thawBuckets(voucher.voucherId, buckets, token);
        return { drift: lastDrift, repaired: false, skipped: round.skipped };
      }
      const settled = (await this.mysql.read(voucher.voucherId, [])).notLive === round.notLive;
      await this.sale.administration.thawBuckets(voucher.voucherId, buckets, token);
      if (settled) return { drift: lastDrift, repaired: true };
    }
    return { drift: lastDrift, repaired: false, skipped: 'cancellations kept committing during the repair; run it again' };
  }

  /** One round under the freeze; the caller thaws. */
  private async repairFrozen(voucher: SeckillRow, buckets: number, token: string): Promise<{ drift: VoucherDrift | null; notLive: number; skipped?: string }> {
    const { voucherId } = voucher;
    if (!(await this.drain(voucherId, buckets))) {
      return { drift: null, notLive: 0, skipped: `queued orders not written to MySQL within ${this.drainTimeoutMs} ms (is an order worker running?)` };
    }
    // No unit may be under way while the units are counted: every bucket is frozen, so no new transfer starts.
    if (!(await this.sale.transfers.endAllOf(voucherId, buckets))) {
      return { drift: null, notLive: 0, skipped: 'a refill between buckets could not be ended durably (replicas lag behind); run it again' };
    }
    const mysql = await this.mysql.read(voucherId, queuedIdsOf((await this.readBuckets(voucherId, buckets)).buckets));
    const unreleasedIn = groupByHome(mysql.unreleased, buckets);
    const snapshots = await Promise.all(
      bucketsOf(buckets).map((bucket) =>
        this.sale.snapshots.bucketSnapshot(
          voucherId,
          bucket,
          (unreleasedIn[bucket.index] ?? []).map((order) => order.orderId),
        ),
      ),
    );
    const released = new Set(snapshots.flatMap((snapshot) => [...snapshot.released]));
    const drift = compareBuckets(voucher, buckets, { buckets: snapshots, transfers: [], given: new Set() }, mysql, released);
    const deltas = stockDeltas(snapshots, mysql, released);
    for (const bucket of bucketsOf(buckets)) {
      const written = await this.sale.administration.repairBucket({
        sale: voucher,
        bucket,
        token,
        stockDelta: deltas[bucket.index]!,
        record: {
          limitPerUser: mysql.limitPerUser,
          liveSlots: new Map([...mysql.liveSlots].filter(([userId]) => homeBucket(userId, buckets) === bucket.index)),
          unreleased: unreleasedIn[bucket.index] ?? [],
        },
      });
      if (written < 0) return { drift, notLive: mysql.notLive, skipped: 'the freeze lapsed before the write (repair too slow); run it again' };
    }
    // The layout record routes the orders to the buckets: written again in case Redis lost it.
    if (!(await this.sale.publisher.publishLayout(voucher, buckets))) {
      return { drift, notLive: mysql.notLive, skipped: "the voucher's shard holds a one-bucket sale besides its buckets; not repaired" };
    }
    return { drift, notLive: mysql.notLive };
  }

  /** Waits until no queued order of the voucher in its lanes is missing from MySQL. */
  private async drain(voucherId: string, buckets: number): Promise<boolean> {
    const deadline = Date.now() + this.drainTimeoutMs;
    for (;;) {
      const queued = queuedIdsOf((await this.readBuckets(voucherId, buckets)).buckets);
      const written = await this.mysql.written(queued);
      if (queued.every((orderId) => written.has(orderId))) return true;
      if (Date.now() >= deadline) return false;
      await sleep(DRAIN_POLL_MS);
    }
  }

  private async readBuckets(voucherId: string, buckets: number): Promise<BucketsRead> {
    const snapshots = await Promise.all(bucketsOf(buckets).map((bucket) => this.sale.snapshots.bucketSnapshot(voucherId, bucket)));
    const transfers = snapshots.flatMap((snapshot) => snapshot.transfers);
    return { buckets: snapshots, transfers, given: await this.sale.transfers.given(transfers) };
  }

  /** Which of MySQL's unreleased orders have their release marker, each in its user's home bucket's lane. */
  private async releasedOf(voucherId: string, buckets: number, mysql: MysqlSnapshot): Promise<Set<string>> {
    const byHome = groupByHome(mysql.unreleased, buckets);
    const found = await Promise.all(
      bucketsOf(buckets).map((bucket: BucketRef) =>
        this.sale.snapshots.releasedOrders(
          voucherId,
          (byHome[bucket.index] ?? []).map((order) => order.orderId),
          bucket,
        ),
      ),
    );
    return new Set(found.flatMap((set) => [...set]));
  }
}

/**
 * Expected against held: the units (Σ stock + pending, less transfers given and not yet settled,
 * against MySQL's stock less queued and unreleased orders) and each user's slots in its home bucket.
 */
function compareBuckets(voucher: SeckillRow, buckets: number, redis: BucketsRead, mysql: MysqlSnapshot, released: Set<string>): VoucherDrift | null {
  const expectedSlots = new Map(mysql.liveSlots);
  let expectedStock = mysql.stock;
  for (const snapshot of redis.buckets) {
    for (const [orderId, { userId, slot }] of snapshot.queued) {
      if (mysql.written.has(orderId)) continue;
      expectedStock -= 1;
      addSlot(expectedSlots, userId, slot);
    }
  }
  for (const order of mysql.unreleased) {
    if (released.has(order.orderId)) continue;
    expectedStock -= 1;
    addSlot(expectedSlots, order.userId, order.slot);
  }
  expectedStock = Math.max(0, expectedStock);
  // A user's slots count in its home bucket; a mark in any other bucket is extra.
  const held = new Map<string, number>();
  const misplaced = new Set<string>();
  redis.buckets.forEach((snapshot, index) => {
    for (const [userId, mask] of snapshot.holders) {
      if (homeBucket(userId, buckets) === index) held.set(userId, mask);
      else if (mask !== 0) misplaced.add(userId);
    }
  });
  const missingBuyers = [...expectedSlots].filter(([user, mask]) => (mask & ~(held.get(user) ?? 0)) !== 0).map(([user]) => user);
  const extraBuyers = [...new Set([...[...held].filter(([user, mask]) => (mask & ~(expectedSlots.get(user) ?? 0)) !== 0).map(([user]) => user), ...misplaced])];
  missingBuyers.sort();
  extraBuyers.sort();
  const missingBuckets = redis.buckets.flatMap((snapshot, index) => (snapshot.exists ? [] : [index]));
  const units = redis.buckets.reduce((sum, snapshot) => sum + snapshot.stock + snapshot.pending, 0);
  const givenUnsettled = redis.transfers.filter((transfer) => redis.given.has(transfer.transferId)).reduce((sum, transfer) => sum + transfer.units, 0);
  const redisStock = missingBuckets.length === buckets ? null : units - givenUnsettled;
  const drift = { voucherId: voucher.voucherId, mysqlStock: mysql.stock, redisStock, missingBuyers, extraBuyers, expectedStock, buckets, missingBuckets };
  if (redisStock === expectedStock && missingBuyers.length === 0 && extraBuyers.length === 0 && missingBuckets.length === 0) return null;
  if (redisStock === null && notHeld(voucher, redis, mysql.stock, expectedStock, expectedSlots)) return null;
  return drift;
}

/** A bucketed sale Redis does not hold at all is no drift on the same terms as one bucket's (reconcile.ts `notHeldRightly`). */
function notHeld(voucher: SeckillRow, redis: BucketsRead, mysqlStock: number, expectedStock: number, expectedSlots: Map<string, number>): boolean {
  if (redis.buckets.some((snapshot) => snapshot.holders.size > 0 || snapshot.queued.size > 0)) return false;
  if (voucher.end.getTime() <= Date.now()) return true;
  return expectedStock === mysqlStock && expectedSlots.size === 0;
}

/**
 * Each bucket's stock change so that the buckets hold MySQL's stock less the unreleased orders
 * (after the drain nothing is queued), read against each bucket's stock and markers together: a
 * release moves both, so the delta holds whenever it lands. Units added are spread as a publish
 * splits them; units taken come from the richest buckets first, never below 0.
 */
function stockDeltas(snapshots: BucketSnapshot[], mysql: MysqlSnapshot, released: Set<string>): number[] {
  const stillHeld = mysql.unreleased.filter((order) => !released.has(order.orderId)).length;
  const held = snapshots.reduce((sum, snapshot) => sum + snapshot.stock, 0);
  const target = Math.max(0, mysql.stock - stillHeld);
  const delta = target - held;
  const of = snapshots.length;
  if (delta >= 0) return snapshots.map((_, index) => shareOf(delta, { index, of }));
  const deltas = snapshots.map(() => 0);
  let toTake = -delta;
  const richestFirst = snapshots.map((snapshot, index) => ({ index, stock: snapshot.stock })).sort((a, b) => b.stock - a.stock);
  for (const { index, stock } of richestFirst) {
    const taken = Math.min(stock, toTake);
    deltas[index] = -taken;
    toTake -= taken;
  }
  return deltas;
}

function groupByHome<T extends { userId: string }>(orders: readonly T[], buckets: number): T[][] {
  const groups: T[][] = Array.from({ length: buckets }, () => []);
  for (const order of orders) groups[homeBucket(order.userId, buckets)]!.push(order);
  return groups;
}

const queuedIdsOf = (snapshots: readonly BucketSnapshot[]): string[] => snapshots.flatMap((snapshot) => [...snapshot.queued.keys()]);

function reportOf(transfer: PendingTransfer, given: Set<string>): PendingTransferReport {
  const { voucherId, transferId, from, to, units, takenMs } = transfer;
  return { voucherId, transferId, from, to, units, ageMs: Math.max(0, Date.now() - takenMs), given: given.has(transferId) };
}

/** Marks `slot` (1..30) in the user's bitmask. */
function addSlot(masks: Map<string, number>, userId: string, slot: number): void {
  masks.set(userId, (masks.get(userId) ?? 0) | (1 << (slot - 1)));
}
