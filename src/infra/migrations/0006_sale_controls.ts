import { sql, type Kysely } from 'kysely';

/**
 * Live sale controls (src/modules/seckill/admin/sale-controls.ts):
 * - `tb_seckill_voucher.total_stock`: units the sale offers, sold or not (stock + live orders).
 *   An administrator sets it (PATCH stock); each store moves its remaining stock by the change of
 *   its own total, so a repeated or resumed change is a no-op. NULL (rows written by hand) is
 *   computed on the first change.
 * - `tb_seckill_voucher.paused`: the administrator's pause, so a sale republished from MySQL
 *   (Redis lost it) stays paused.
 * - `tb_seckill_audit`: who changed which sale when, with the state before and after.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE tb_seckill_voucher
      ADD COLUMN total_stock INT UNSIGNED NULL COMMENT 'units offered, sold or not; NULL: stock + live orders' AFTER stock,
      ADD COLUMN paused TINYINT UNSIGNED NOT NULL DEFAULT 0 COMMENT '1 while an administrator pauses the sale' AFTER end_time`.execute(db);
  await sql`
    UPDATE tb_seckill_voucher s
    SET s.total_stock = s.stock + (SELECT COUNT(*) FROM tb_voucher_order o WHERE o.voucher_id = s.voucher_id AND o.live = 1)`.execute(db);
  await sql`
    CREATE TABLE tb_seckill_audit (
      id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
      voucher_id BIGINT UNSIGNED NOT NULL,
      admin_id BIGINT UNSIGNED NOT NULL COMMENT 'tb_user.id of the administrator',
      action VARCHAR(16) NOT NULL COMMENT 'pause | resume | update',
      before_state JSON NOT NULL,
      after_state JSON NOT NULL,
      create_time DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
      PRIMARY KEY (id),
      KEY idx_voucher (voucher_id, id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='changes administrators made to live sales'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE tb_seckill_audit`.execute(db);
  await sql`ALTER TABLE tb_seckill_voucher DROP COLUMN paused, DROP COLUMN total_stock`.execute(db);
}
