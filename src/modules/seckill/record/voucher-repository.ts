import type { Insertable, Selectable } from 'kysely';
import type { Db } from '../../../infra/db.js';
import type { SeckillVoucherTable, VoucherTable } from '../../../infra/schema.js';
import type { SaleState } from '../types.js';

export type NewVoucher = Omit<Insertable<VoucherTable>, 'id' | 'type'>;
export type SeckillFields = Omit<Insertable<SeckillVoucherTable>, 'voucher_id'>;

export type VoucherWithSeckill = Selectable<VoucherTable> & {
  stock: number | null;
  begin_time: Date | null;
  end_time: Date | null;
  limit_per_user: number | null;
  purchase_gate: string | null;
};

export class VoucherRepository {
  constructor(private readonly db: Db) {}

  async shopExists(shopId: string): Promise<boolean> {
    const row = await this.db.selectFrom('tb_shop').select('id').where('id', '=', shopId).executeTakeFirst();
    return row !== undefined;
  }

  async insertNormal(voucher: NewVoucher): Promise<string> {
    const result = await this.db
      .insertInto('tb_voucher')
      .values({ ...voucher, type: 0 })
      .executeTakeFirstOrThrow();
    return String(result.insertId);
  }

  /** tb_voucher and tb_seckill_voucher in one transaction: never one without the other. */
  async insertSeckill(voucher: NewVoucher, seckill: SeckillFields): Promise<string> {
    return this.db.transaction().execute(async (trx) => {
      const result = await trx
        .insertInto('tb_voucher')
        .values({ ...voucher, type: 1 })
        .executeTakeFirstOrThrow();
      const voucherId = String(result.insertId);
      await trx
        .insertInto('tb_seckill_voucher')
        .values({ ...seckill, voucher_id: voucherId })
        .execute();
      return voucherId;
    });
  }

  async listByShop(shopId: string): Promise<VoucherWithSeckill[]> {
    return this.db
      .selectFrom('tb_voucher as v')
      .leftJoin('tb_seckill_voucher as s', 's.voucher_id', 'v.id')
      .selectAll('v')
      .select(['s.stock', 's.begin_time', 's.end_time', 's.limit_per_user', 's.purchase_gate'])
      .where('v.shop_id', '=', shopId)
      .orderBy('v.id')
      .execute();
  }

  /** The shop a voucher belongs to (whose list shows it). */
  async shopOf(voucherId: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('tb_voucher').select('shop_id').where('id', '=', voucherId).executeTakeFirst();
    return row?.shop_id;
  }

  /** A seckill voucher's sale as MySQL records it (stock, window, total, administrator's pause, limit), or null. */
  async findSale(voucherId: string): Promise<SaleState | null> {
    const row = await this.db.selectFrom('tb_seckill_voucher').selectAll().where('voucher_id', '=', voucherId).executeTakeFirst();
    return row ? toSaleState(row) : null;
  }

  /** The ids of up to `limit` seckill vouchers (what the order route knows exists). */
  async listSeckillIds(limit: number): Promise<string[]> {
    const rows = await this.db.selectFrom('tb_seckill_voucher').select('voucher_id').limit(limit).execute();
    return rows.map((row) => row.voucher_id);
  }

  /** Seckill vouchers whose sale has not ended: what Redis must know about. */
  async listUnfinishedSales(now: Date): Promise<SaleState[]> {
    const rows = await this.db.selectFrom('tb_seckill_voucher').selectAll().where('end_time', '>', now).execute();
    return rows.map(toSaleState);
  }

  /** Up to `limit` vouchers on sale now (begun, not ended), ending soonest first: what the stock gauge shows. */
  async listOpenSeckillIds(now: Date, limit: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom('tb_seckill_voucher')
      .select('voucher_id')
      .where('begin_time', '<=', now)
      .where('end_time', '>', now)
      .orderBy('end_time')
      .limit(limit)
      .execute();
    return rows.map((row) => row.voucher_id);
  }
}

function toSaleState(row: Selectable<SeckillVoucherTable>): SaleState {
  return {
    voucherId: row.voucher_id,
    stock: row.stock,
    begin: row.begin_time,
    end: row.end_time,
    total: row.total_stock,
    suspended: row.paused === 1,
    limitPerUser: row.limit_per_user,
    buckets: row.buckets,
  };
}
