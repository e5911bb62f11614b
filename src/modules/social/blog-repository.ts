import type { Insertable, Selectable } from 'kysely';
import type { Db } from '../../infra/db.js';
import type { BlogTable } from '../../infra/schema.js';

export type BlogRow = Selectable<BlogTable>;
export type NewBlog = Omit<Insertable<BlogTable>, 'id' | 'liked' | 'comments' | 'create_time' | 'update_time'>;

export class BlogRepository {
  constructor(private readonly db: Db) {}

  /**
   * Saves a blog and attaches its images in one transaction: each must be an upload of the author
   * that no blog shows yet. Returns the id, or null (nothing saved) when an image is not such an upload.
   */
  async insertWithImages(blog: NewBlog, images: readonly string[]): Promise<string | null> {
    return this.db
      .transaction()
      .execute(async (trx) => {
        const id = String((await trx.insertInto('tb_blog').values(blog).executeTakeFirstOrThrow()).insertId);
        if (images.length === 0) return id;
        const attached = await trx
          .updateTable('tb_upload')
          .set({ blog_id: id })
          .where('name', 'in', images)
          .where('user_id', '=', blog.user_id)
          .where('blog_id', 'is', null)
          .executeTakeFirst();
        if (Number(attached.numUpdatedRows) === images.length) return id;
        throw new ImagesNotOwned();
      })
      .catch((err: unknown) => {
        if (err instanceof ImagesNotOwned) return null;
        throw err;
      });
  }

  async findById(id: string): Promise<BlogRow | undefined> {
    return this.db.selectFrom('tb_blog').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async findByIds(ids: readonly string[]): Promise<BlogRow[]> {
    if (ids.length === 0) return [];
    return this.db.selectFrom('tb_blog').selectAll().where('id', 'in', ids).execute();
  }

  /** Most liked first (ties: newest first). */
  async pageHot(offset: number, limit: number): Promise<BlogRow[]> {
    return this.db.selectFrom('tb_blog').selectAll().orderBy('liked', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute();
  }

  /** A user's blogs, newest first. */
  async pageByUser(userId: string, offset: number, limit: number): Promise<BlogRow[]> {
    return this.db.selectFrom('tb_blog').selectAll().where('user_id', '=', userId).orderBy('id', 'desc').limit(limit).offset(offset).execute();
  }

  /**
   * Sets liked to `count()` while holding the blog's row lock, reading the count inside the lock.
   * Callers that each changed the like set before calling are serialised by the lock, and each
   * reads the set later than the one before it, so the last one writes the final count: the
   * column ends equal to the set however the calls interleave (see BlogService.toggleLike).
   * Returns the count written, or undefined when the blog does not exist.
   */
  async syncLiked(id: string, count: () => Promise<number>): Promise<number | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const row = await trx.selectFrom('tb_blog').select('liked').where('id', '=', id).forUpdate().executeTakeFirst();
      if (!row) return undefined;
      const liked = await count();
      if (liked !== row.liked) await trx.updateTable('tb_blog').set({ liked }).where('id', '=', id).execute();
      return liked;
    });
  }

  async shopExists(shopId: string): Promise<boolean> {
    return (await this.db.selectFrom('tb_shop').select('id').where('id', '=', shopId).executeTakeFirst()) !== undefined;
  }
}

/** Rolls back insertWithImages. */
class ImagesNotOwned extends Error {}
