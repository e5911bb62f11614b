import { sql, type Kysely } from 'kysely';

/**
 * The buckets a seckill voucher's stock is sold from (issue 30, docs/flows/seckill-buckets.md):
 * `tb_seckill_voucher.buckets`, 1..8, set at creation and changeable until 10 s before the sale
 * begins. Existing sales get 1, the one-hash layout every sale had before.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE tb_seckill_voucher
      ADD COLUMN buckets TINYINT UNSIGNED NOT NULL DEFAULT 1 COMMENT 'Redis buckets the stock is sold from (1 = one hash)' AFTER captcha_max_number`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE tb_seckill_voucher DROP COLUMN buckets`.execute(db);
}
