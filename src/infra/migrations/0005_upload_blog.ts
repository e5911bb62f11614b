import { sql, type Kysely } from 'kysely';

/**
 * tb_upload.blog_id: the blog an image belongs to (NULL while it belongs to none). A blog may only
 * show images its author uploaded, each at most once; images still unattached after
 * UPLOAD_UNATTACHED_TTL_SECONDS are deleted by the sweeper (idx_unattached finds them). Images
 * already named by a blog of their owner are attached here, so the sweeper spares them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE tb_upload
      ADD COLUMN blog_id BIGINT UNSIGNED NULL COMMENT 'tb_blog.id once a blog shows the image' AFTER size,
      ADD KEY idx_unattached (blog_id, create_time)`.execute(db);
  await sql`
    UPDATE tb_upload u JOIN tb_blog b ON b.user_id = u.user_id AND FIND_IN_SET(u.name, b.images) > 0
    SET u.blog_id = b.id
    WHERE u.blog_id IS NULL`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE tb_upload DROP KEY idx_unattached, DROP COLUMN blog_id`.execute(db);
}
