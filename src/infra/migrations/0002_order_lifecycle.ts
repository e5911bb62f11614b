import { sql, type Kysely } from 'kysely';

/**
 * Lets a user buy a voucher again after an order was cancelled, while still allowing only one
 * live order per user and voucher:
 * - `live` is 1 for an order that counts (unpaid, paid, used) and NULL once it is cancelled or
 *   refunded. The unique key becomes (user_id, voucher_id, live): NULLs never collide in a
 *   unique index (MySQL and MariaDB alike), so any number of dead orders may sit beside one live one.
 * - `stock_released` records that a cancelled order's stock and buyer mark were given back in
 *   Redis, so a sweeper can finish that step after a crash without doing it twice.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE tb_voucher_order
      ADD COLUMN live TINYINT UNSIGNED NULL DEFAULT 1 COMMENT '1 while the order counts, NULL when cancelled/refunded' AFTER status,
      ADD COLUMN stock_released TINYINT UNSIGNED NOT NULL DEFAULT 0 COMMENT '1 once a cancelled order gave its stock back in Redis' AFTER live,
      DROP INDEX uk_user_voucher,
      ADD UNIQUE KEY uk_user_voucher_live (user_id, voucher_id, live),
      ADD KEY idx_status_create (status, create_time)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE tb_voucher_order
      DROP INDEX idx_status_create,
      DROP INDEX uk_user_voucher_live,
      ADD UNIQUE KEY uk_user_voucher (user_id, voucher_id),
      DROP COLUMN stock_released,
      DROP COLUMN live`.execute(db);
}
