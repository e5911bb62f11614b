import type { Db } from '../../infra/db.js';

/** tb_upload: each uploaded file, its owner and, once a blog shows it, that blog. */
export class UploadRepository {
  constructor(private readonly db: Db) {}

  async insert(userId: string, name: string, size: number): Promise<void> {
    await this.db.insertInto('tb_upload').values({ user_id: userId, name, size }).execute();
  }

  async find(name: string): Promise<{ userId: string; blogId: string | null } | undefined> {
    const row = await this.db.selectFrom('tb_upload').select(['user_id', 'blog_id']).where('name', '=', name).executeTakeFirst();
    return row && { userId: row.user_id, blogId: row.blog_id };
  }

  /** Deletes the record if no blog shows the image (a blog's attach and this cannot both win). */
  async deleteUnattached(name: string): Promise<boolean> {
    const result = await this.db.deleteFrom('tb_upload').where('name', '=', name).where('blog_id', 'is', null).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  /** Names of images uploaded before `cutoff` that no blog shows, oldest first. */
  async unattachedBefore(cutoff: Date, limit: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom('tb_upload')
      .select('name')
      .where('blog_id', 'is', null)
      .where('create_time', '<', cutoff)
      .orderBy('create_time')
      .limit(limit)
      .execute();
    return rows.map((row) => row.name);
  }
}
