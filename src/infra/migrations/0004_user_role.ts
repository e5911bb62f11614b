import { sql, type Kysely } from 'kysely';

/**
 * Roles replace the ADMIN_USER_IDS list: `tb_user.role` is 'user' (everyone, the default) or
 * 'admin' (may create and update shops and vouchers and read visitor statistics). Granted and
 * revoked with `npm run admin`; the login copies it into the session.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE tb_user
      ADD COLUMN role VARCHAR(16) NOT NULL DEFAULT 'user' COMMENT 'user | admin' AFTER icon,
      ADD CONSTRAINT ck_user_role CHECK (role IN ('user', 'admin'))`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE tb_user DROP CONSTRAINT ck_user_role, DROP COLUMN role`.execute(db);
}
