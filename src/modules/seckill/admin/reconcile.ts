import { randomBytes } from 'node:crypto';
import type { Db } from '../../../infra/db.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { SALE_KEYS_KEPT_AFTER_END_MS } from '../keys.js';
import type { Sale } from '../sale/sale.js';
import type { SaleSnapshot } from '../sale/sale-snapshots.js';
import { BucketReconciler } from './reconcile-buckets.js';
import type { MysqlSnapshot, PendingTransferReport, ReconcileReport, RepairResult, SeckillRow, VoucherDrift } from './reconcile-report.js';
import { SALE_BUSY, withSaleLock } from './sale-controls.js';

/**
 * Reconciliation of a flash sale's Redis state with MySQL, the record of orders.
 *
 * For a voucher, Redis must hold
 *   stock  = MySQL stock − (accepted orders not yet in MySQL) − (cancelled orders whose unit the
 *            canceller has not yet given back in Redis)
 *   slots  = per user, the slots of its live MySQL orders ∪ the slots of those two kinds of orders
 *            (a bitmask per user: the limit per user counts them).
 * "Accepted, not yet in MySQL" are the entries of the shard's queued hash whose order id is not a
 * MySQL row: an order between the worker's commit and its HDEL is in both and counts once.
 *
 * A check (repair: false) compares a snapshot: Redis first, then MySQL, so a worker commit in
 * between is seen in MySQL and no longer counted as queued (correct); an order accepted and
 * committed in that gap of a running sale can show as transient drift, which is why a drifted
 * voucher is checked again before being reported. A repair is exact under a live sale: it freezes
 * the voucher (reserve.lua answers "frozen"), waits until the worker has written every queued
 * order of it, recomputes from MySQL alone and writes stock + buyers + thaw in one script on
 * the voucher's shard. A voucher sold from B > 1 buckets: the same, summed over its buckets, in
 * reconcile-buckets.ts. See docs/flows/reconciliation.md.
 */

export interface ReconcileOptions {
  repair: boolean;
  voucherIds?: string[];
  /** Longest wait, per voucher, for the worker to write its queued orders while frozen (default 10 s). */
  drainTimeoutMs?: number;
}

export class UnknownVoucherError extends Error {
  override name = 'UnknownVoucherError';
}

/** The voucher's MySQL row was deleted while it was being reconciled: nothing left to compare. */
class VoucherGone extends Error {
  override name = 'VoucherGone';
}

const CHECK_ATTEMPTS = 3;
const CHECK_RETRY_MS = 200;
const REPAIR_ATTEMPTS = 3;
const DRAIN_POLL_MS = 50;
/** The freeze outlives the drain wait by this much, then lapses by itself (a crashed repair cannot stop a sale). */
const FREEZE_MARGIN_MS = 30_000;

/** The parts of the sale a reconciliation reads and repairs. */
export type ReconciledSale = Pick<Sale, 'keys' | 'snapshots' | 'administration' | 'publisher' | 'transfers' | 'layouts'>;

export async function reconcileSeckill(deps: { db: Db; sale: ReconciledSale }, options: ReconcileOptions): Promise<ReconcileReport> {
  const reconciler = new Reconciler(deps.db, deps.sale, options.drainTimeoutMs ?? 10_000);
  const vouchers = await reconciler.scope(options.voucherIds);
  const report: ReconcileReport = { vouchers: vouchers.length, drifted: [], repaired: 0, skipped: [] };
  for (const voucher of vouchers) {
    try {
      await reconcileOne(reconciler, voucher, options.repair, report);
    } catch (error) {
      if (!(error instanceof VoucherGone)) throw error;
    }
  }
  return report;
}

/** Checks one voucher and, if asked and drifted, repairs it; adds what it found to the report. */
async function reconcileOne(reconciler: Reconciler, voucher: SeckillRow, repair: boolean, report: ReconcileReport): Promise<void> {
  // Never misread as drifted or as clean: reported as not checked, with why.
  const unreadable = await reconciler.unreadable(voucher);
  if (unreadable !== null) {
    (report.unchecked ??= []).push({ voucherId: voucher.voucherId, reason: unreadable });
    return;
  }
  const { drift, transfers } = await reconciler.check(voucher);
  if (transfers.length > 0) (report.pendingTransfers ??= []).push(...transfers);
  if (drift === null) return;
  if (!repair) {
    report.drifted.push(drift);
    return;
  }
  // Under the sale's lock: an administrator's change (sale-controls.ts) cannot interleave, and the
  // window the repair writes to Redis is read fresh under it.
  const locked = await withSaleLock(reconciler.db, voucher.voucherId, async () => reconciler.repairFresh(voucher));
  const result = locked === SALE_BUSY ? { drift: null, repaired: false, skipped: 'an administrator is changing this sale; run it again' } : locked;
  // Report what the frozen, drained comparison found (the check's snapshot may have been transient).
  if (result.drift) report.drifted.push(result.drift);
  else if (result.skipped) report.drifted.push(drift);
  if (result.drift && result.repaired) report.repaired += 1;
  if (result.skipped) report.skipped.push({ voucherId: voucher.voucherId, reason: result.skipped });
}

class Reconciler {
  /** The comparison and repair of vouchers sold from B > 1 buckets (reconcile-buckets.ts). */
  private readonly buckets: BucketReconciler;

  constructor(
    readonly db: Db,
    private readonly sale: ReconciledSale,
    private readonly drainTimeoutMs: number,
  ) {
    this.buckets = new BucketReconciler(
      sale,
      { read: (voucherId, queuedIds) => this.readMysql(voucherId, queuedIds), written: (orderIds) => this.writtenOrders(orderIds) },
      drainTimeoutMs,
    );
  }

  /**
   * Why the voucher's Redis state cannot be read by the layout MySQL records for it, or null when
   * it can: its buckets are on lanes these keys do not have, or Redis's layout record names
   * another bucket count (its orders may be in buckets the comparison would not read, and a
   * repair would count units where no order is decided).
   */
  async unreadable(voucher: SeckillRow): Promise<string | null> {
    const buckets = voucher.buckets ?? 1;
    if (buckets > 1 && !this.sale.keys.bucketLanes) return `sold from ${buckets} buckets, and these sale keys have no bucket lanes to read them in`;
    const inRedis = await this.sale.layouts.bucketsOf(voucher.voucherId);
    if (inRedis > 1 && inRedis !== buckets) {
      return `Redis's layout record sells it from ${inRedis} buckets, MySQL's row from ${buckets}: which holds its orders is unknown (a change of buckets left half done?)`;
    }
    return null;
  }

  /** The voucher's row read again under its sale's lock, then repaired if its layout can still be read. */
  async repairFresh(voucher: SeckillRow): Promise<RepairResult> {
    const fresh = await this.fresh(voucher);
    const unreadable = await this.unreadable(fresh);
    return unreadable === null ? this.repair(fresh) : { drift: null, repaired: false, skipped: unreadable };
  }

  /** The given vouchers, or every seckill voucher whose Redis keys may still exist (sale not ended longer than the keep window ago). */
  async scope(voucherIds?: string[]): Promise<SeckillRow[]> {
    let query = this.db.selectFrom('tb_seckill_voucher').select(['voucher_id', 'stock', 'begin_time', 'end_time', 'buckets']);
    if (voucherIds && voucherIds.length > 0) query = query.where('voucher_id', 'in', voucherIds);
    else query = query.where('end_time', '>', new Date(Date.now() - SALE_KEYS_KEPT_AFTER_END_MS));
    const rows = await query.orderBy('voucher_id').execute();
    const found = new Set(rows.map((row) => row.voucher_id));
    const unknown = (voucherIds ?? []).filter((id) => !found.has(id));
    if (unknown.length > 0) throw new UnknownVoucherError(`not a seckill voucher: ${unknown.join(', ')}`);
    return rows.map((row) => ({ voucherId: row.voucher_id, stock: row.stock, begin: row.begin_time, end: row.end_time, buckets: row.buckets }));
  }

  /** The voucher's row read again (its window may have moved since the scope was read). */
  async fresh(voucher: SeckillRow): Promise<SeckillRow> {
    const row = await this.db
      .selectFrom('tb_seckill_voucher')
      .select(['stock', 'begin_time', 'end_time', 'buckets'])
      .where('voucher_id', '=', voucher.voucherId)
      .executeTakeFirst();
    if (!row) throw new VoucherGone(voucher.voucherId);
    return { voucherId: voucher.voucherId, stock: row.stock, begin: row.begin_time, end: row.end_time, buckets: row.buckets };
  }

  /** A snapshot comparison; a drift must show in consecutive snapshots to be reported. With it, a bucketed sale's transfers pending in the last snapshot. */
  async check(voucher: SeckillRow): Promise<{ drift: VoucherDrift | null; transfers: PendingTransferReport[] }> {
    let last: { drift: VoucherDrift | null; transfers: PendingTransferReport[] } = { drift: null, transfers: [] };
    for (let attempt = 0; attempt < CHECK_ATTEMPTS; attempt += 1) {
      if (attempt > 0) await sleep(CHECK_RETRY_MS);
      last = await this.compareOnce(voucher);
      if (last.drift === null) return last;
    }
    return last;
  }

  private async compareOnce(voucher: SeckillRow): Promise<{ drift: VoucherDrift | null; transfers: PendingTransferReport[] }> {
    const buckets = voucher.buckets ?? 1;
    if (buckets > 1) return this.buckets.compareOnce(voucher, buckets);
    const redis = await this.sale.snapshots.snapshot(voucher.voucherId);
    const mysql = await this.readMysql(voucher.voucherId, [...redis.queued.keys()]);
    return { drift: await this.compare(voucher, redis, mysql), transfers: [] };
  }

  /**
   * Freeze → drain → compare → write + thaw, retried when a cancellation committed in MySQL
   * while we worked (its release may have raced our write; the next round sees it released).
   */
  async repair(voucher: SeckillRow): Promise<RepairResult> {
    const buckets = voucher.buckets ?? 1;
    if (buckets > 1) return this.buckets.repair(voucher, buckets);
    let lastDrift: VoucherDrift | null = null;
    for (let attempt = 0; attempt < REPAIR_ATTEMPTS; attempt += 1) {
      const token = randomBytes(8).toString('hex');
      await this.sale.administration.freeze(voucher, token, this.drainTimeoutMs + FREEZE_MARGIN_MS);
      const drained = await this.drain(voucher.voucherId);
      if (!drained) {
        await this.sale.administration.thaw(voucher.voucherId, token);
        return {
          drift: lastDrift,
          repaired: false,
          skipped: `queued orders not written to MySQL within ${this.drainTimeoutMs} ms (is an order worker running?)`,
        };
      }
      const redis = await this.sale.snapshots.snapshot(voucher.voucherId);
      const mysql = await this.readMysql(voucher.voucherId, [...redis.queued.keys()]).catch(async (error: unknown) => {
        await this.sale.administration.thaw(voucher.voucherId, token);
        throw error;
      });
      const drift = await this.compare(voucher, redis, mysql);
      // Always write (exact, and it thaws the sale): the markers are decided inside the script.
      const written = await this.sale.administration.repair(voucher, token, mysql);
      if (written < 0) return { drift: drift ?? lastDrift, repaired: false, skipped: 'the freeze lapsed before the write (repair too slow); nothing written' };
      lastDrift = drift ?? lastDrift;
      if ((await this.readMysql(voucher.voucherId, [])).notLive === mysql.notLive) return { drift: lastDrift, repaired: true };
    }
    return { drift: lastDrift, repaired: false, skipped: 'cancellations kept committing during the repair; run it again' };
  }

  /** Waits until no queued order of the voucher is missing from MySQL (the worker wrote or released them). */
  private async drain(voucherId: string): Promise<boolean> {
    const deadline = Date.now() + this.drainTimeoutMs;
    for (;;) {
      const queued = (await this.sale.snapshots.snapshot(voucherId)).queued;
      const written = await this.writtenOrders([...queued.keys()]);
      if ([...queued.keys()].every((orderId) => written.has(orderId))) return true;
      if (Date.now() >= deadline) return false;
      await sleep(DRAIN_POLL_MS);
    }
  }

  private async readMysql(voucherId: string, queuedIds: string[]): Promise<MysqlSnapshot> {
    return this.db.transaction().execute(async (trx) => {
      // One consistent read view (REPEATABLE READ) for stock and orders.
      const seckill = await trx.selectFrom('tb_seckill_voucher').select(['stock', 'limit_per_user']).where('voucher_id', '=', voucherId).executeTakeFirst();
      if (!seckill) throw new VoucherGone(voucherId);
      const orders = await trx
        .selectFrom('tb_voucher_order')
        .select(['id', 'user_id', 'live', 'slot', 'status', 'stock_released'])
        .where('voucher_id', '=', voucherId)
        .execute();
      const liveSlots = new Map<string, number>();
      const unreleased: MysqlSnapshot['unreleased'] = [];
      let notLive = 0;
      for (const order of orders) {
        if (order.live === 1) addSlot(liveSlots, order.user_id, order.slot);
        else notLive += 1;
        if (order.live !== 1 && order.stock_released === 0) unreleased.push({ orderId: order.id, userId: order.user_id, slot: order.slot });
      }
      const ids = new Set(orders.map((order) => order.id));
      const written = new Set(queuedIds.filter((id) => ids.has(id)));
      return { stock: seckill.stock, limitPerUser: seckill.limit_per_user, liveSlots, unreleased, written, notLive };
    });
  }

  private async writtenOrders(orderIds: string[]): Promise<Set<string>> {
    if (orderIds.length === 0) return new Set();
    const rows = await this.db.selectFrom('tb_voucher_order').select('id').where('id', 'in', orderIds).execute();
    return new Set(rows.map((row) => row.id));
  }

  private async compare(voucher: SeckillRow, redis: SaleSnapshot, mysql: MysqlSnapshot): Promise<VoucherDrift | null> {
    const { voucherId } = voucher;
    const expectedSlots = new Map(mysql.liveSlots);
    let expectedStock = mysql.stock;
    for (const [orderId, { userId, slot }] of redis.queued) {
      if (mysql.written.has(orderId)) continue;
      expectedStock -= 1;
      addSlot(expectedSlots, userId, slot);
    }
    const released = await this.sale.snapshots.releasedOrders(
      voucherId,
      mysql.unreleased.map((order) => order.orderId),
    );
    for (const order of mysql.unreleased) {
      if (released.has(order.orderId)) continue;
      expectedStock -= 1;
      addSlot(expectedSlots, order.userId, order.slot);
    }
    expectedStock = Math.max(0, expectedStock);
    // A user is missing when Redis lacks a slot it holds, extra when Redis marks a slot it does not hold.
    const missingBuyers = [...expectedSlots].filter(([user, mask]) => (mask & ~(redis.holders.get(user) ?? 0)) !== 0).map(([user]) => user);
    const extraBuyers = [...redis.holders].filter(([user, mask]) => (mask & ~(expectedSlots.get(user) ?? 0)) !== 0).map(([user]) => user);
    missingBuyers.sort();
    extraBuyers.sort();
    if (redis.stock === expectedStock && missingBuyers.length === 0 && extraBuyers.length === 0) return null;
    if (redis.stock === null && notHeldRightly(voucher, redis, mysql.stock, expectedStock, expectedSlots)) return null;
    return { voucherId, mysqlStock: mysql.stock, redisStock: redis.stock, missingBuyers, extraBuyers, expectedStock };
  }
}

/**
 * A sale Redis does not hold at all (no hash, no buyer marks, no queued order: a fresh deploy,
 * Redis restarted empty, the keys expired) is no drift when nothing depends on Redis holding it:
 * it has ended (its orders are answered "ended" from MySQL, never published again), or nothing is
 * sold or held, so the publish its next order makes from MySQL writes exactly what is expected.
 * A sale with live orders, queued or unreleased ones, and any part of a sale left in Redis is
 * compared as usual.
 */
function notHeldRightly(voucher: SeckillRow, redis: SaleSnapshot, mysqlStock: number, expectedStock: number, expectedSlots: Map<string, number>): boolean {
  if (redis.holders.size > 0 || redis.queued.size > 0) return false;
  if (voucher.end.getTime() <= Date.now()) return true;
  return expectedStock === mysqlStock && expectedSlots.size === 0;
}

/** Marks `slot` (1..30) in the user's bitmask. */
function addSlot(masks: Map<string, number>, userId: string, slot: number): void {
  masks.set(userId, (masks.get(userId) ?? 0) | (1 << (slot - 1)));
}
