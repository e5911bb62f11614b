import { sql, type Kysely } from 'kysely';

/**
 * The cost of a captcha sale's proof of work, set per sale (src/modules/seckill/gate/captcha-challenges.ts):
 * `tb_seckill_voucher.captcha_max_number`, the ALTCHA maxNumber its challenges draw their answer
 * from. Existing sales get 400, the cost every captcha sale had before (PURCHASE_CAPTCHA_MAX_NUMBER's default).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE tb_seckill_voucher
      ADD COLUMN captcha_max_number INT UNSIGNED NOT NULL DEFAULT 400 COMMENT 'captcha cost: ALTCHA maxNumber, the answer drawn from 1..this' AFTER purchase_gate`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE tb_seckill_voucher DROP COLUMN captcha_max_number`.execute(db);
}
