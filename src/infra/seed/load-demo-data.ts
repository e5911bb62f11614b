import type { Db } from '../db.js';
import { DEMO_USERS, SHOP_TYPES, demoShops, demoVouchers } from './demo-data.js';

export interface SeedReport {
  shopTypes: number;
  shops: number;
  users: number;
  vouchers: number;
}

/**
 * Loads the demo data with fixed ids and INSERT IGNORE: a second load inserts nothing and
 * leaves rows that users changed as they are. Returns how many rows were new.
 */
export async function loadDemoData(db: Db, now = new Date()): Promise<SeedReport> {
  return db.transaction().execute(async (trx) => {
    const inserted = async (query: { executeTakeFirst(): Promise<{ numInsertedOrUpdatedRows?: bigint }> }) =>
      Number((await query.executeTakeFirst()).numInsertedOrUpdatedRows ?? 0n);

    const shopTypes = await inserted(trx.insertInto('tb_shop_type').ignore().values(SHOP_TYPES));
    const shops = await inserted(trx.insertInto('tb_shop').ignore().values(demoShops()));
    const users = await inserted(trx.insertInto('tb_user').ignore().values(DEMO_USERS));
    const { vouchers, seckill } = demoVouchers(now);
    const voucherCount = await inserted(trx.insertInto('tb_voucher').ignore().values(vouchers));
    await trx.insertInto('tb_seckill_voucher').ignore().values(seckill).execute();
    return { shopTypes, shops, users, vouchers: voucherCount };
  });
}
