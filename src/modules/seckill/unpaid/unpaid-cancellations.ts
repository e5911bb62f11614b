import { sql } from 'kysely';
import type { Db } from '../../../infra/db.js';
import { OrderStatus } from '../record/order-repository.js';

/**
 * Cancelling many unpaid orders in one transaction, for the release queue: orders of one payment
 * window come due together (a sale's burst), and one transaction per batch instead of one per
 * order keeps each cancelled within a fraction of a second of its due time.
 */
export class UnpaidCancellations {
  constructor(private readonly db: Db) {}

  /**
   * Cancels those of `orderIds` still unpaid and gives their units back to MySQL stock; returns
   * the ids cancelled by this call. Exactly once per order, as `cancelUnpaid`: the rows are locked
   * (`FOR UPDATE`, in primary-key order) before their status is read, so of two instances
   * cancelling the same order one sees it unpaid and the other sees it cancelled. Stock rows are
   * updated in voucher order, as the worker's batches do: the two never deadlock on them.
   */
  async cancelMany(orderIds: readonly string[]): Promise<Array<{ orderId: string; voucherId: string }>> {
    if (orderIds.length === 0) return [];
    return this.db.transaction().execute(async (trx) => {
      const unpaid = await trx
        .selectFrom('tb_voucher_order')
        .select(['id', 'voucher_id'])
        .where('id', 'in', [...orderIds])
        .where('status', '=', OrderStatus.unpaid)
        .orderBy('id')
        .forUpdate()
        .execute();
      if (unpaid.length === 0) return [];
      await trx
        .updateTable('tb_voucher_order')
        .set({ status: OrderStatus.cancelled, live: null })
        .where(
          'id',
          'in',
          unpaid.map((row) => row.id),
        )
        .execute();
      const perVoucher = new Map<string, number>();
      for (const row of unpaid) perVoucher.set(row.voucher_id, (perVoucher.get(row.voucher_id) ?? 0) + 1);
      const vouchers = [...perVoucher].sort(([a], [b]) => (BigInt(a) < BigInt(b) ? -1 : 1));
      for (const [voucherId, units] of vouchers) {
        await trx
          .updateTable('tb_seckill_voucher')
          .set({ stock: sql`stock + ${units}` })
          .where('voucher_id', '=', voucherId)
          .execute();
      }
      return unpaid.map((row) => ({ orderId: row.id, voucherId: row.voucher_id }));
    });
  }

  /** `stock_released = 1` for orders whose unit is back in Redis. */
  async markReleased(orderIds: readonly string[]): Promise<void> {
    if (orderIds.length === 0) return;
    await this.db
      .updateTable('tb_voucher_order')
      .set({ stock_released: 1 })
      .where('id', 'in', [...orderIds])
      .execute();
  }
}
