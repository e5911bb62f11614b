import { sql, type Kysely } from 'kysely';

/**
 * hmdp's tables, MySQL 8 and MariaDB 10.11 compatible.
 *
 * Differences from the original, on purpose:
 * - tb_voucher_order has UNIQUE (user_id, voucher_id): a redelivered order message becomes a
 *   no-op insert instead of a second order. tb_follow has UNIQUE (user_id, follow_user_id).
 * - tb_seckill_voucher.stock has CHECK (stock >= 0) as a last line of defence against overselling.
 * - Times are DATETIME in UTC (TIMESTAMP ends in 2038); the connection pins time_zone to +00:00.
 */
const TABLE_OPTIONS = sql.raw('ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci');
const TIMESTAMPS = sql.raw(`
  create_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
  update_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP`);

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE tb_user (
      id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
      phone VARCHAR(11) NOT NULL,
      password VARCHAR(128) NOT NULL DEFAULT '',
      nick_name VARCHAR(32) NOT NULL DEFAULT '',
      icon VARCHAR(255) NOT NULL DEFAULT '',
      ${TIMESTAMPS},
      PRIMARY KEY (id),
      UNIQUE KEY uk_phone (phone)
    ) ${TABLE_OPTIONS}`.execute(db);

  await sql`
    CREATE TABLE tb_user_info (
      user_id BIGINT UNSIGNED NOT NULL,
      city VARCHAR(64) NOT NULL DEFAULT '',
      introduce VARCHAR(128) NOT NULL DEFAULT '',
      fans INT UNSIGNED NOT NULL DEFAULT 0,
      followee INT UNSIGNED NOT NULL DEFAULT 0,
      gender TINYINT UNSIGNED NOT NULL DEFAULT 0 COMMENT '0 male, 1 female',
      birthday DATE NULL,
      credits INT UNSIGNED NOT NULL DEFAULT 0,
      level TINYINT UNSIGNED NOT NULL DEFAULT 0,
      ${TIMESTAMPS},
      PRIMARY KEY (user_id)
    ) ${TABLE_OPTIONS}`.execute(db);

  await sql`
    CREATE TABLE tb_shop_type (
      id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
      name VARCHAR(32) NOT NULL,
      icon VARCHAR(255) NOT NULL DEFAULT '',
      sort INT UNSIGNED NOT NULL DEFAULT 0,
      ${TIMESTAMPS},
      PRIMARY KEY (id)
    ) ${TABLE_OPTIONS}`.execute(db);

  await sql`
    CREATE TABLE tb_shop (
      id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
      name VARCHAR(128) NOT NULL,
      type_id BIGINT UNSIGNED NOT NULL,
      images VARCHAR(1024) NOT NULL DEFAULT '' COMMENT 'comma-separated URLs',
      area VARCHAR(128) NOT NULL DEFAULT '',
      address VARCHAR(255) NOT NULL,
      x DOUBLE NOT NULL COMMENT 'longitude',
      y DOUBLE NOT NULL COMMENT 'latitude',
      avg_price BIGINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'yuan',
      sold INT UNSIGNED NOT NULL DEFAULT 0,
      comments INT UNSIGNED NOT NULL DEFAULT 0,
      score INT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'stars x 10',
      open_hours VARCHAR(32) NOT NULL DEFAULT '',
      ${TIMESTAMPS},
      PRIMARY KEY (id),
      KEY idx_type (type_id),
      KEY idx_name (name)
    ) ${TABLE_OPTIONS}`.execute(db);

  await sql`
    CREATE TABLE tb_blog (
      id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
      shop_id BIGINT UNSIGNED NOT NULL,
      user_id BIGINT UNSIGNED NOT NULL,
      title VARCHAR(255) NOT NULL,
      images VARCHAR(2048) NOT NULL DEFAULT '' COMMENT 'comma-separated, at most 9',
      content VARCHAR(2048) NOT NULL,
      liked INT UNSIGNED NOT NULL DEFAULT 0,
      comments INT UNSIGNED NOT NULL DEFAULT 0,
      ${TIMESTAMPS},
      PRIMARY KEY (id),
      KEY idx_user (user_id),
      KEY idx_liked (liked)
    ) ${TABLE_OPTIONS}`.execute(db);

  await sql`
    CREATE TABLE tb_blog_comments (
      id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
      user_id BIGINT UNSIGNED NOT NULL,
      blog_id BIGINT UNSIGNED NOT NULL,
      parent_id BIGINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'top-level comment, 0 if this is one',
      answer_id BIGINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'comment replied to',
      content VARCHAR(255) NOT NULL,
      liked INT UNSIGNED NOT NULL DEFAULT 0,
      status TINYINT UNSIGNED NOT NULL DEFAULT 0 COMMENT '0 normal, 1 reported, 2 hidden',
      ${TIMESTAMPS},
      PRIMARY KEY (id),
      KEY idx_blog (blog_id)
    ) ${TABLE_OPTIONS}`.execute(db);

  await sql`
    CREATE TABLE tb_follow (
      id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
      user_id BIGINT UNSIGNED NOT NULL,
      follow_user_id BIGINT UNSIGNED NOT NULL,
      create_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
      PRIMARY KEY (id),
      UNIQUE KEY uk_user_follow (user_id, follow_user_id),
      KEY idx_follow_user (follow_user_id)
    ) ${TABLE_OPTIONS}`.execute(db);

  await sql`
    CREATE TABLE tb_voucher (
      id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
      shop_id BIGINT UNSIGNED NOT NULL,
      title VARCHAR(255) NOT NULL,
      sub_title VARCHAR(255) NOT NULL DEFAULT '',
      rules VARCHAR(1024) NOT NULL DEFAULT '',
      pay_value BIGINT UNSIGNED NOT NULL COMMENT 'fen',
      actual_value BIGINT UNSIGNED NOT NULL COMMENT 'fen',
      type TINYINT UNSIGNED NOT NULL DEFAULT 0 COMMENT '0 normal, 1 seckill',
      status TINYINT UNSIGNED NOT NULL DEFAULT 1 COMMENT '1 on sale, 2 off sale, 3 expired',
      ${TIMESTAMPS},
      PRIMARY KEY (id),
      KEY idx_shop (shop_id)
    ) ${TABLE_OPTIONS}`.execute(db);

  await sql`
    CREATE TABLE tb_seckill_voucher (
      voucher_id BIGINT UNSIGNED NOT NULL,
      stock INT NOT NULL,
      begin_time DATETIME NOT NULL,
      end_time DATETIME NOT NULL,
      ${TIMESTAMPS},
      PRIMARY KEY (voucher_id),
      CONSTRAINT ck_seckill_stock CHECK (stock >= 0),
      CONSTRAINT ck_seckill_window CHECK (end_time > begin_time)
    ) ${TABLE_OPTIONS}`.execute(db);

  await sql`
    CREATE TABLE tb_voucher_order (
      id BIGINT UNSIGNED NOT NULL COMMENT 'global unique id from src/lib/id, not auto-increment',
      user_id BIGINT UNSIGNED NOT NULL,
      voucher_id BIGINT UNSIGNED NOT NULL,
      pay_type TINYINT UNSIGNED NOT NULL DEFAULT 1 COMMENT '1 balance, 2 alipay, 3 wechat',
      status TINYINT UNSIGNED NOT NULL DEFAULT 1
        COMMENT '1 unpaid, 2 paid, 3 used, 4 cancelled, 5 refunding, 6 refunded',
      create_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
      pay_time DATETIME NULL,
      use_time DATETIME NULL,
      refund_time DATETIME NULL,
      update_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
      PRIMARY KEY (id),
      UNIQUE KEY uk_user_voucher (user_id, voucher_id),
      KEY idx_voucher (voucher_id)
    ) ${TABLE_OPTIONS}`.execute(db);

  await sql`
    CREATE TABLE tb_sign (
      id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
      user_id BIGINT UNSIGNED NOT NULL,
      year SMALLINT UNSIGNED NOT NULL,
      month TINYINT UNSIGNED NOT NULL,
      date DATE NOT NULL,
      is_backup TINYINT UNSIGNED NOT NULL DEFAULT 0 COMMENT '1 if made up later',
      PRIMARY KEY (id),
      UNIQUE KEY uk_user_date (user_id, date)
    ) ${TABLE_OPTIONS}`.execute(db);
}

const TABLES = [
  'tb_sign',
  'tb_voucher_order',
  'tb_seckill_voucher',
  'tb_voucher',
  'tb_follow',
  'tb_blog_comments',
  'tb_blog',
  'tb_shop',
  'tb_shop_type',
  'tb_user_info',
  'tb_user',
];

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of TABLES) await sql`DROP TABLE IF EXISTS ${sql.table(table)}`.execute(db);
}
