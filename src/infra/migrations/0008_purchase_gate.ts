import { sql, type Kysely } from 'kysely';

/**
 * The purchase gate of a sale (src/modules/seckill/gate/purchase-gate.ts):
 * `tb_seckill_voucher.purchase_gate` = `off` (hmdp's order route as it was), `token` (an order
 * needs a signed purchase token, issued once the window is open) or `captcha` (the token also
 * needs a solved captcha). Chosen when the sale is created or changed (PATCH).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE tb_seckill_voucher
      ADD COLUMN purchase_gate VARCHAR(8) NOT NULL DEFAULT 'off' COMMENT 'off | token | captcha' AFTER paused`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE tb_seckill_voucher DROP COLUMN purchase_gate`.execute(db);
}
