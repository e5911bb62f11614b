import { sql, type Kysely } from 'kysely';

/**
 * `tb_voucher_order.create_time` is the time the sale accepted the order (Redis time, in ms),
 * written by the order worker and the sync strategy, not the time MySQL got the row: after a
 * MySQL outage the backlog keeps its own times, and the payment window counts from acceptance.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE tb_voucher_order
      MODIFY create_time DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) COMMENT 'when the sale accepted the order (Redis time)'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE tb_voucher_order MODIFY create_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP`.execute(db);
}
