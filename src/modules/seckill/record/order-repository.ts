import { sql, type Transaction } from 'kysely';
import type { Db } from '../../../infra/db.js';
import type { Database } from '../../../infra/schema.js';
import type { NewOrder, OrderRow, UserOrderRow } from '../types.js';

/** tb_voucher_order.status values (hmdp's). */
export const OrderStatus = { unpaid: 1, paid: 2, used: 3, cancelled: 4, refunding: 5, refunded: 6 } as const;

/**
 * `created`: inserted now, stock taken. `duplicate`: this very order was written before (a
 * redelivered stream entry). `user-has-order`: the user already has another live order in the
 * same slot of the voucher (Redis lost its slot mark, e.g. in a failover); MySQL's unique key
 * (user, voucher, slot, live) refused it, so no user ever holds more than the limit.
 */
export type PersistOutcome = 'created' | 'duplicate' | 'user-has-order';

export class OutOfStockInDatabase extends Error {
  override name = 'OutOfStockInDatabase';
}

/** A batch that cannot be written as all-new orders (a redelivery or a conflict in it); nothing was written. */
export class BatchNotAllNew extends Error {
  override name = 'BatchNotAllNew';
}

export class OrderRepository {
  constructor(private readonly db: Db) {}

  /**
   * Writes one order and takes its unit of stock, in one transaction. Idempotent: the primary
   * key (order id) and the unique (user, voucher, slot, live) key turn a second write into a no-op.
   */
  async persist(order: NewOrder): Promise<PersistOutcome> {
    return this.db.transaction().execute(async (trx) => {
      // INSERT IGNORE, not ON DUPLICATE KEY UPDATE: mysql2 connects with CLIENT_FOUND_ROWS, under
      // which a no-op duplicate update also reports 1 affected row and would look like an insert.
      const insert = await trx.insertInto('tb_voucher_order').ignore().values(orderRow(order)).executeTakeFirst();
      if (Number(insert.numInsertedOrUpdatedRows ?? 0n) === 0) {
        const same = await trx.selectFrom('tb_voucher_order').select('id').where('id', '=', order.orderId).executeTakeFirst();
        return same ? 'duplicate' : 'user-has-order';
      }
      await takeStock(trx, order.voucherId);
      return 'created';
    });
  }

  /**
   * Writes new orders together, in one transaction: one multi-row insert and one stock update per
   * voucher, instead of a transaction per order. All or nothing: it throws (and writes nothing)
   * when any order was written before or conflicts with a live order (BatchNotAllNew), or when a
   * voucher lacks the stock (OutOfStockInDatabase); `persist` then tells the orders apart one by one.
   */
  async persistAllNew(orders: readonly NewOrder[]): Promise<void> {
    if (orders.length === 0) return;
    await this.db.transaction().execute(async (trx) => {
      const insert = await trx.insertInto('tb_voucher_order').ignore().values(orders.map(orderRow)).executeTakeFirst();
      const inserted = Number(insert.numInsertedOrUpdatedRows ?? 0n);
      if (inserted !== orders.length) throw new BatchNotAllNew(`${orders.length - inserted} of ${orders.length} orders were not new`);
      const perVoucher = new Map<string, number>();
      for (const order of orders) perVoucher.set(order.voucherId, (perVoucher.get(order.voucherId) ?? 0) + 1);
      await takeStockOfAll(trx, perVoucher);
    });
  }

  /** The order worker's circuit-breaker probe: is MySQL answering? */
  async ping(): Promise<void> {
    await sql`SELECT 1`.execute(this.db);
  }

  async findForUser(orderId: string, userId: string): Promise<OrderRow | undefined> {
    return this.db.selectFrom('tb_voucher_order').selectAll().where('id', '=', orderId).where('user_id', '=', userId).executeTakeFirst();
  }

  /** The user's newest order of the voucher (any state), if MySQL has one. */
  async findLatestForUserAndVoucher(userId: string, voucherId: string): Promise<OrderRow | undefined> {
    return (
      this.db
        .selectFrom('tb_voucher_order')
        .selectAll()
        .where('user_id', '=', userId)
        .where('voucher_id', '=', voucherId)
        // Ids rise with the time of acceptance (src/lib/id), finer than create_time's second.
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst()
    );
  }

  /** A page of the user's orders, newest first (by id: ids rise with the time of acceptance), with their voucher's title, shop and price. */
  async listForUser(userId: string, offset: number, limit: number): Promise<UserOrderRow[]> {
    return this.db
      .selectFrom('tb_voucher_order as o')
      .innerJoin('tb_voucher as v', 'v.id', 'o.voucher_id')
      .select(['o.id', 'o.voucher_id', 'o.status', 'o.create_time', 'o.pay_time', 'v.title', 'v.shop_id', 'v.pay_value'])
      .where('o.user_id', '=', userId)
      .orderBy('o.id', 'desc')
      .limit(limit)
      .offset(offset)
      .execute();
  }

  /** Title, shop and price of vouchers (for orders not yet in MySQL, listed with their user's orders). */
  async voucherSummaries(voucherIds: string[]): Promise<Map<string, Pick<UserOrderRow, 'title' | 'shop_id' | 'pay_value'>>> {
    if (voucherIds.length === 0) return new Map();
    const rows = await this.db.selectFrom('tb_voucher').select(['id', 'title', 'shop_id', 'pay_value']).where('id', 'in', voucherIds).execute();
    return new Map(rows.map((row) => [row.id, row]));
  }

  /** Which of these order ids are MySQL rows. */
  async existing(orderIds: string[]): Promise<Set<string>> {
    if (orderIds.length === 0) return new Set();
    const rows = await this.db.selectFrom('tb_voucher_order').select('id').where('id', 'in', orderIds).execute();
    return new Set(rows.map((row) => row.id));
  }

  /** How many orders the user has (the index on user_id answers it). */
  async countForUser(userId: string): Promise<number> {
    const row = await this.db
      .selectFrom('tb_voucher_order')
      .select((eb) => eb.fn.countAll<string>().as('count'))
      .where('user_id', '=', userId)
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }

  /** Marks an unpaid order paid; false if it is not (any longer) unpaid. */
  async pay(orderId: string, userId: string): Promise<boolean> {
    const result = await this.db
      .updateTable('tb_voucher_order')
      .set({ status: OrderStatus.paid, pay_time: new Date() })
      .where('id', '=', orderId)
      .where('user_id', '=', userId)
      .where('status', '=', OrderStatus.unpaid)
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  async listUnpaidCreatedBefore(cutoff: Date, limit: number): Promise<OrderRow[]> {
    return this.db
      .selectFrom('tb_voucher_order')
      .selectAll()
      .where('status', '=', OrderStatus.unpaid)
      .where('create_time', '<', cutoff)
      .orderBy('create_time')
      .limit(limit)
      .execute();
  }

  /**
   * Cancels an unpaid order and gives its unit back to MySQL stock, in one transaction. The
   * conditional update makes it exactly once: of two instances cancelling the same order, one
   * sees `status = unpaid` and the other updates nothing.
   */
  async cancelUnpaid(orderId: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const cancelled = await trx
        .updateTable('tb_voucher_order')
        .set({ status: OrderStatus.cancelled, live: null })
        .where('id', '=', orderId)
        .where('status', '=', OrderStatus.unpaid)
        .executeTakeFirst();
      if (cancelled.numUpdatedRows !== 1n) return false;
      const order = await trx.selectFrom('tb_voucher_order').select('voucher_id').where('id', '=', orderId).executeTakeFirstOrThrow();
      await trx
        .updateTable('tb_seckill_voucher')
        .set({ stock: sql`stock + 1` })
        .where('voucher_id', '=', order.voucher_id)
        .execute();
      return true;
    });
  }

  /** Cancelled orders whose unit has not been given back in Redis yet. */
  async listCancelledUnreleased(limit: number): Promise<OrderRow[]> {
    return this.db
      .selectFrom('tb_voucher_order')
      .selectAll()
      .where('status', '=', OrderStatus.cancelled)
      .where('stock_released', '=', 0)
      .limit(limit)
      .execute();
  }

  async markReleased(orderId: string): Promise<void> {
    await this.db.updateTable('tb_voucher_order').set({ stock_released: 1 }).where('id', '=', orderId).execute();
  }
}

/** An order's row; create_time is its acceptance (a redelivery writes the same value), else MySQL's now. */
function orderRow(order: NewOrder) {
  return {
    id: order.orderId,
    user_id: order.userId,
    voucher_id: order.voucherId,
    slot: order.slot ?? 1,
    ...(order.acceptedMs === undefined ? {} : { create_time: new Date(order.acceptedMs) }),
  };
}

/**
 * Takes each voucher's units in one UPDATE (a batch spread over many sales would otherwise send
 * one statement per voucher): all or nothing, since a voucher short of stock matches no row and
 * the caller's transaction is rolled back. InnoDB locks the rows in primary key order whatever
 * the order of the list, so two batches never deadlock on them.
 */
async function takeStockOfAll(trx: Transaction<Database>, unitsByVoucher: ReadonlyMap<string, number>): Promise<void> {
  if (unitsByVoucher.size === 1) {
    const [voucherId, units] = unitsByVoucher.entries().next().value!;
    return takeStock(trx, voucherId, units);
  }
  const voucherIds = [...unitsByVoucher.keys()];
  const units = sql<number>`CASE voucher_id ${sql.join(
    [...unitsByVoucher].map(([voucherId, count]) => sql`WHEN ${voucherId} THEN ${count}`),
    sql` `,
  )} END`;
  const taken = await trx
    .updateTable('tb_seckill_voucher')
    .set({ stock: sql`stock - ${units}` })
    .where('voucher_id', 'in', voucherIds)
    .where('stock', '>=', units)
    .executeTakeFirst();
  if (taken.numUpdatedRows !== BigInt(voucherIds.length)) {
    throw new OutOfStockInDatabase(
      `${voucherIds.length - Number(taken.numUpdatedRows)} of vouchers ${voucherIds.join(', ')} lack the stock of this batch in MySQL`,
    );
  }
}

async function takeStock(trx: Transaction<Database>, voucherId: string, units = 1): Promise<void> {
  const taken = await trx
    .updateTable('tb_seckill_voucher')
    .set({ stock: sql`stock - ${units}` })
    .where('voucher_id', '=', voucherId)
    .where('stock', '>=', units)
    .executeTakeFirst();
  if (taken.numUpdatedRows !== 1n)
    throw new OutOfStockInDatabase(`voucher ${voucherId} has ${units === 1 ? 'no stock' : `fewer than ${units} units of stock`} left in MySQL`);
}
