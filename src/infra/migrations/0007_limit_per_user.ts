import { sql, type Kysely } from 'kysely';

/**
 * A per-voucher limit of live orders per user (src/modules/seckill: reserve.lua decides it):
 * - `tb_seckill_voucher.limit_per_user`: how many live orders one user may hold (1 = hmdp's rule).
 * - `tb_voucher_order.slot`: which of the user's slots 1..limit the order holds (reserve.lua assigns
 *   the lowest free one). The unique key becomes (user_id, voucher_id, slot, live): MySQL still
 *   refuses a second live order in one slot, so a user never holds more than `limit` live orders
 *   even if Redis lost its count; dead orders (live NULL) never collide. Existing orders hold slot 1.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE tb_seckill_voucher
      ADD COLUMN limit_per_user TINYINT UNSIGNED NOT NULL DEFAULT 1 COMMENT 'live orders one user may hold' AFTER total_stock`.execute(db);
  await sql`
    ALTER TABLE tb_voucher_order
      ADD COLUMN slot TINYINT UNSIGNED NOT NULL DEFAULT 1 COMMENT 'the user''s slot 1..limit_per_user this order holds' AFTER live,
      DROP INDEX uk_user_voucher_live,
      ADD UNIQUE KEY uk_user_voucher_slot_live (user_id, voucher_id, slot, live)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE tb_voucher_order
      DROP INDEX uk_user_voucher_slot_live,
      ADD UNIQUE KEY uk_user_voucher_live (user_id, voucher_id, live),
      DROP COLUMN slot`.execute(db);
  await sql`ALTER TABLE tb_seckill_voucher DROP COLUMN limit_per_user`.execute(db);
}
