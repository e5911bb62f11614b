import { sql, type Selectable } from 'kysely';
import type { Db } from '../../../infra/db.js';
import type { SeckillVoucherTable } from '../../../infra/schema.js';
import { toGateMode, type GateMode } from '../gate/gate-settings-cache.js';
import type { SaleControl } from '../sale/sale-scripts.js';
import type { Sale } from '../sale/sale.js';
import { Conflict, InvalidInput, UnknownVoucher } from '../errors/index.js';
import { SECKILL_MESSAGES } from '../messages.js';

/**
 * An administrator steering a live sale: pause, resume, set the stock, move or end the window.
 *
 * Safety while orders flow, across instances:
 * - One change per voucher at a time: a MariaDB named lock (GET_LOCK) per voucher, held on one
 *   pooled connection for the whole change.
 * - Redis never sells a unit MySQL lacks (the worker's `stock >= n` would refuse an accepted
 *   order): raising writes MySQL first, then Redis; lowering takes the units off Redis first
 *   (control.lua, refused below what is sold or queued), then off MySQL.
 * - Idempotent: `stock` is the total the sale offers (sold or not) and each store moves its
 *   remaining stock by the change of its own total, so a repeat, or a retry after a failure
 *   between the two writes, converges and changes nothing more. Redis is written on every call.
 * - Audited: a change that alters MySQL writes one tb_seckill_audit row in the same transaction;
 *   a repeated pause or an unchanged PATCH is a no-op and writes none (`changed: false`).
 * - A sale sold from B > 1 buckets takes the same path; Redis gets the change in every
 *   bucket (sale/bucket-controls.ts: Redis's total is the sum of the buckets' totals).
 */

export interface SaleSettings {
  /** Units the sale offers, sold or not. */
  stock: number;
  beginTime: string;
  endTime: string;
  paused: boolean;
  /** Live orders one user may hold (lowering it keeps the orders users hold; they buy no more). */
  limitPerUser: number;
  /** What an order needs besides the login (purchase-gate.ts). */
  purchaseGate: GateMode;
  /** The captcha's cost (captcha-challenges.ts), used while the gate is `captcha`. Absent from audit rows written before migration 0010. */
  captchaMaxNumber: number;
  /** Redis buckets the stock is sold from (docs/flows/seckill-buckets.md). Absent from audit rows written before migration 0011. */
  buckets: number;
}

export interface SaleControlResult extends SaleSettings {
  voucherId: string;
  /** Units still for sale (Redis, the live count; MySQL's when Redis does not hold the sale). */
  left: number;
  /** False when the sale already was as asked (nothing recorded). */
  changed: boolean;
}

export interface SaleChange {
  stock?: number;
  beginTime?: string;
  endTime?: string;
  limitPerUser?: number;
  purchaseGate?: GateMode;
  captchaMaxNumber?: number;
  /** Changed alone, until BUCKETS_FIXED_BEFORE_BEGIN_MS before the sale begins. */
  buckets?: number;
}

/**
 * The buckets of a sale change only until this long before it begins: the change rewrites the
 * sale's Redis keys (seckill-buckets.md), which must be done before any order can be accepted, and
 * an instance routing by the older B finds no hash and reads the layout again.
 */
export const BUCKETS_FIXED_BEFORE_BEGIN_MS = 10_000;

/** The settings of the purchase gate a change sets (MySQL alone: every instance reads them from there). */
type GateChange = Pick<SaleChange, 'purchaseGate' | 'captchaMaxNumber'>;

export interface AuditEntry {
  id: string;
  voucherId: string;
  adminId: string;
  action: string;
  before: SaleSettings;
  after: SaleSettings;
  time: string;
}

type Action = 'pause' | 'resume' | 'update';
type Row = Selectable<SeckillVoucherTable>;

/** How long a change waits for another change of the same voucher (below MYSQL_QUERY_TIMEOUT_MS). */
const LOCK_WAIT_SECONDS = 0.5;

export class SaleControls {
  constructor(
    private readonly db: Db,
    /** Controls a sale in Redis; rebuckets it (its layout, stock and publishing). */
    private readonly sale: Pick<Sale, 'keys' | 'administration' | 'layouts' | 'reads' | 'publisher'>,
    /**
     * Awaited after every control that went through, `changed` or not (the gate settings memory
     * forgets a changed sale; the shop's voucher list cache is invalidated). Called for a no-op
     * too: the retry of a control whose hook failed changes nothing, but must still run it.
     */
    private readonly onApplied: (voucherId: string, changed: boolean) => void | Promise<void> = () => undefined,
  ) {}

  pause(voucherId: string, adminId: string): Promise<SaleControlResult> {
    return this.apply(voucherId, adminId, 'pause', () => ({ suspended: true }));
  }

  resume(voucherId: string, adminId: string): Promise<SaleControlResult> {
    return this.apply(voucherId, adminId, 'resume', () => ({ suspended: false }));
  }

  /**
   * Sets any of stock (total), beginTime, endTime, limitPerUser, purchaseGate, captchaMaxNumber; an
   * endTime not in the future ends the sale now (one not begun yet ends without opening).
   */
  update(voucherId: string, adminId: string, change: SaleChange): Promise<SaleControlResult> {
    if (change.buckets !== undefined) {
      if (Object.keys(change).length > 1) throw new InvalidInput(SECKILL_MESSAGES.bucketsAlone());
      return this.rebucket(voucherId, adminId, change.buckets);
    }
    const plan = (row: Row): SaleControl => {
      const { begin, end } = plannedWindow(row, change, Date.now());
      const control: SaleControl = {};
      if (change.stock !== undefined) control.total = change.stock;
      if (change.beginTime !== undefined || begin.getTime() !== row.begin_time.getTime()) control.begin = begin;
      if (change.endTime !== undefined) control.end = end;
      if (change.limitPerUser !== undefined) control.limitPerUser = change.limitPerUser;
      return control;
    };
    return this.apply(voucherId, adminId, 'update', plan, { purchaseGate: change.purchaseGate, captchaMaxNumber: change.captchaMaxNumber });
  }

  /** The voucher's audit, newest first. */
  async audit(voucherId: string, limit = 100): Promise<AuditEntry[]> {
    const rows = await this.db.selectFrom('tb_seckill_audit').selectAll().where('voucher_id', '=', voucherId).orderBy('id', 'desc').limit(limit).execute();
    return rows.map((row) => ({
      id: row.id,
      voucherId: row.voucher_id,
      adminId: row.admin_id,
      action: row.action,
      before: parseSettings(row.before_state),
      after: parseSettings(row.after_state),
      time: row.create_time.toISOString(),
    }));
  }

  /**
   * Sells the sale from `buckets` buckets from now on: MySQL first (with its audit row), then Redis
   * (the keys of the layout Redis holds removed, the new layout published from MySQL's row). Only
   * until BUCKETS_FIXED_BEFORE_BEGIN_MS before the sale begins, and only while nothing is sold or
   * queued (a sale moved to a later begin keeps its buckets). A retry after a failure between
   * the writes finds MySQL done and redoes Redis.
   */
  private async rebucket(voucherId: string, adminId: string, buckets: number): Promise<SaleControlResult> {
    if (buckets > 1 && !this.sale.keys.bucketLanes) throw new InvalidInput(SECKILL_MESSAGES.bucketsOff({ most: 1 }));
    const result = await withSaleLock(this.db, voucherId, async (conn) => {
      const row = await conn.selectFrom('tb_seckill_voucher').selectAll().where('voucher_id', '=', voucherId).executeTakeFirst();
      if (!row) throw new UnknownVoucher(voucherId);
      const until = row.begin_time.getTime() - BUCKETS_FIXED_BEFORE_BEGIN_MS;
      if (Date.now() >= until) {
        throw new Conflict(SECKILL_MESSAGES.bucketsFixed({ until: new Date(until).toISOString(), begin: row.begin_time.toISOString() }));
      }
      const total = row.total_stock ?? (await this.countTotal(conn, voucherId));
      const inRedis = await this.sale.layouts.bucketsOf(voucherId);
      const redisStock = await this.sale.reads.stockOf(voucherId);
      if (row.stock !== total || (redisStock !== null && redisStock !== total)) throw new Conflict(SECKILL_MESSAGES.bucketsAfterSales());
      const before = settingsOf(row, total);
      const after: SaleSettings = { ...before, buckets };
      const changed = before.buckets !== buckets;
      if (changed) {
        await conn.transaction().execute(async (trx) => {
          await trx.updateTable('tb_seckill_voucher').set({ buckets }).where('voucher_id', '=', voucherId).execute();
          await trx
            .insertInto('tb_seckill_audit')
            .values({ voucher_id: voucherId, admin_id: adminId, action: 'update', before_state: JSON.stringify(before), after_state: JSON.stringify(after) })
            .execute();
        });
      }
      if (inRedis !== buckets || redisStock === null) {
        await this.sale.publisher.unpublish(voucherId, inRedis);
        await this.sale.publisher.publish({
          voucherId,
          stock: row.stock,
          begin: row.begin_time,
          end: row.end_time,
          total,
          suspended: row.paused === 1,
          limitPerUser: row.limit_per_user,
          buckets,
        });
      }
      return { voucherId, ...after, left: row.stock, changed };
    });
    if (result === SALE_BUSY) throw new Conflict(SECKILL_MESSAGES.saleChangeBusy());
    await this.onApplied(voucherId, result.changed);
    return result;
  }

  private async apply(voucherId: string, adminId: string, action: Action, plan: (row: Row) => SaleControl, gate: GateChange = {}): Promise<SaleControlResult> {
    const result = await withSaleLock(this.db, voucherId, (conn) => this.applyLocked(conn, voucherId, adminId, action, plan, gate));
    if (result === SALE_BUSY) throw new Conflict(SECKILL_MESSAGES.saleChangeBusy());
    await this.onApplied(voucherId, result.changed);
    return result;
  }

  private async applyLocked(
    conn: Db,
    voucherId: string,
    adminId: string,
    action: Action,
    plan: (row: Row) => SaleControl,
    gate: GateChange,
  ): Promise<SaleControlResult> {
    const row = await conn.selectFrom('tb_seckill_voucher').selectAll().where('voucher_id', '=', voucherId).executeTakeFirst();
    if (!row) throw new UnknownVoucher(voucherId);
    const total = row.total_stock ?? (await this.countTotal(conn, voucherId));
    const control = plan(row);
    const before = settingsOf(row, total);
    const after: SaleSettings = {
      stock: control.total ?? before.stock,
      beginTime: control.begin?.toISOString() ?? before.beginTime,
      endTime: control.end?.toISOString() ?? before.endTime,
      paused: control.suspended ?? before.paused,
      limitPerUser: control.limitPerUser ?? before.limitPerUser,
      purchaseGate: gate.purchaseGate ?? before.purchaseGate,
      captchaMaxNumber: gate.captchaMaxNumber ?? before.captchaMaxNumber,
      buckets: before.buckets,
    };
    // Redis learns MySQL's total (if it lacks one) before MySQL changes: a retry then finds it.
    const initial = await this.sale.administration.control(voucherId, total, {}, row.buckets);
    const changed = JSON.stringify(before) !== JSON.stringify(after);
    let redis;
    if (after.stock < before.stock || (initial.outcome === 'applied' && after.stock < initial.total)) {
      redis = await this.sale.administration.control(voucherId, total, control, row.buckets);
      if (redis.outcome === 'below-sold') throw belowSold(redis.sold);
      if (changed) await this.write(conn, row, total, adminId, action, before, after);
    } else {
      if (changed) await this.write(conn, row, total, adminId, action, before, after);
      redis = await this.sale.administration.control(voucherId, total, control, row.buckets);
      if (redis.outcome === 'below-sold') throw belowSold(redis.sold);
    }
    const left = redis.outcome === 'applied' ? redis.stock : row.stock + (after.stock - before.stock);
    return { voucherId, ...after, left, changed };
  }

  /** MySQL's side of a change and its audit row, in one transaction. */
  private async write(conn: Db, row: Row, total: number, adminId: string, action: Action, before: SaleSettings, after: SaleSettings): Promise<void> {
    const delta = after.stock - before.stock;
    await conn.transaction().execute(async (trx) => {
      const updated = await trx
        .updateTable('tb_seckill_voucher')
        .set({
          stock: sql`stock + ${delta}`,
          total_stock: after.stock,
          begin_time: new Date(after.beginTime),
          end_time: new Date(after.endTime),
          paused: after.paused ? 1 : 0,
          limit_per_user: after.limitPerUser,
          purchase_gate: after.purchaseGate,
          captcha_max_number: after.captchaMaxNumber,
        })
        .where('voucher_id', '=', row.voucher_id)
        .where('stock', '>=', -delta)
        .executeTakeFirst();
      if (updated.numUpdatedRows !== 1n) throw belowSold(total - row.stock);
      await trx
        .insertInto('tb_seckill_audit')
        .values({ voucher_id: row.voucher_id, admin_id: adminId, action, before_state: JSON.stringify(before), after_state: JSON.stringify(after) })
        .execute();
    });
  }

  /**
   * A total never set (a row written by hand): remaining stock + live orders, in one statement
   * (one consistent read: the worker inserts orders and takes stock in one transaction).
   */
  private async countTotal(conn: Db, voucherId: string): Promise<number> {
    const { rows } = await sql<{ total: number | string }>`
      SELECT s.stock + (SELECT COUNT(*) FROM tb_voucher_order o WHERE o.voucher_id = s.voucher_id AND o.live = 1) AS total
      FROM tb_seckill_voucher s WHERE s.voucher_id = ${voucherId}`.execute(conn);
    const total = Number(rows[0]?.total ?? 0);
    await conn.updateTable('tb_seckill_voucher').set({ total_stock: total }).where('voucher_id', '=', voucherId).where('total_stock', 'is', null).execute();
    return total;
  }
}

export const SALE_BUSY = Symbol('sale busy');

/**
 * Runs `work` holding the voucher's MariaDB named lock, on one pooled connection (given to
 * `work`), so administrators' changes and reconciliation repairs of a sale never interleave,
 * whichever instance or process runs them. SALE_BUSY when another holds it after LOCK_WAIT_SECONDS.
 */
export async function withSaleLock<T>(db: Db, voucherId: string, work: (conn: Db) => Promise<T>): Promise<T | typeof SALE_BUSY> {
  return db.connection().execute(async (conn) => {
    const { rows } = await sql<{ locked: number | null }>`SELECT GET_LOCK(${lockName(voucherId)}, ${LOCK_WAIT_SECONDS}) AS locked`.execute(conn);
    if (rows[0]?.locked !== 1) return SALE_BUSY;
    try {
      return await work(conn);
    } finally {
      await sql`SELECT RELEASE_LOCK(${lockName(voucherId)})`.execute(conn);
    }
  });
}

/**
 * MariaDB's named locks are server-wide: the name carries the database (hashed, to stay within
 * GET_LOCK's 64 characters), so deployments or test databases sharing a server never block each
 * other's sales of the same voucher id.
 */
const lockName = (voucherId: string) => sql<string>`CONCAT('seckill:sale:', ${voucherId}, ':', MD5(DATABASE()))`;

/**
 * The window a change asks for, in whole seconds. An endTime not in the future ends the sale now:
 * an end already past stays as it was (a repeated "end now" changes nothing), and a sale not begun
 * yet closes without opening (its begin moves to a second before the end, beginTime not being
 * sent). Otherwise the end must follow the begin, and the refusal names the field that was sent.
 */
function plannedWindow(row: Row, change: SaleChange, now: number): { begin: Date; end: Date } {
  let begin = change.beginTime === undefined ? row.begin_time : wholeSeconds(new Date(change.beginTime));
  let end = change.endTime === undefined ? row.end_time : wholeSeconds(new Date(change.endTime));
  if (change.endTime !== undefined && end.getTime() <= now) {
    end = row.end_time.getTime() <= now ? row.end_time : wholeSeconds(new Date(now));
    if (change.beginTime === undefined && begin.getTime() >= end.getTime()) begin = new Date(end.getTime() - 1000);
  }
  if (end.getTime() > begin.getTime()) return { begin, end };
  if (change.endTime === undefined) throw new InvalidInput(SECKILL_MESSAGES.beginAfterSaleEnd({ end: end.toISOString() }));
  if (change.beginTime === undefined) throw new InvalidInput(SECKILL_MESSAGES.endBeforeSaleBegin({ begin: begin.toISOString() }));
  throw new InvalidInput(SECKILL_MESSAGES.endBeforeBegin());
}

const belowSold = (sold: number): InvalidInput => new InvalidInput(SECKILL_MESSAGES.stockBelowSold({ sold }));

function settingsOf(row: Row, total: number): SaleSettings {
  return {
    stock: total,
    beginTime: row.begin_time.toISOString(),
    endTime: row.end_time.toISOString(),
    paused: row.paused === 1,
    limitPerUser: row.limit_per_user,
    purchaseGate: toGateMode(row.purchase_gate),
    captchaMaxNumber: row.captcha_max_number,
    buckets: row.buckets,
  };
}

function parseSettings(value: unknown): SaleSettings {
  // mysql2 returns MariaDB's JSON (a LONGTEXT alias) as a string.
  return (typeof value === 'string' ? JSON.parse(value) : value) as SaleSettings;
}

const wholeSeconds = (date: Date): Date => new Date(Math.floor(date.getTime() / 1000) * 1000);
