import { sql, type Kysely } from 'kysely';

/**
 * tb_upload records who uploaded each blog image, so only its owner may delete it
 * (hmdp let anyone delete any file by name).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE tb_upload (
      id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
      user_id BIGINT UNSIGNED NOT NULL,
      name VARCHAR(128) NOT NULL COMMENT 'path under the upload folder, e.g. /blogs/3/7/<uuid>.png',
      size INT UNSIGNED NOT NULL,
      create_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
      PRIMARY KEY (id),
      UNIQUE KEY uk_name (name),
      KEY idx_user (user_id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS tb_upload`.execute(db);
}
