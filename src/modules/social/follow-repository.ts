import type { Db } from '../../infra/db.js';

/** tb_follow: the source of truth of who follows whom (unique (user_id, follow_user_id)). */
export class FollowRepository {
  constructor(private readonly db: Db) {}

  /** True when the row is new (INSERT IGNORE on the unique pair: a repeated follow is a no-op). */
  async follow(userId: string, followeeId: string): Promise<boolean> {
    const result = await this.db.insertInto('tb_follow').ignore().values({ user_id: userId, follow_user_id: followeeId }).executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  /** True when a row was deleted. */
  async unfollow(userId: string, followeeId: string): Promise<boolean> {
    const result = await this.db.deleteFrom('tb_follow').where('user_id', '=', userId).where('follow_user_id', '=', followeeId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async isFollowing(userId: string, followeeId: string): Promise<boolean> {
    const row = await this.db.selectFrom('tb_follow').select('id').where('user_id', '=', userId).where('follow_user_id', '=', followeeId).executeTakeFirst();
    return row !== undefined;
  }

  /** Everyone `userId` follows. */
  async followees(userId: string): Promise<string[]> {
    const rows = await this.db.selectFrom('tb_follow').select('follow_user_id').where('user_id', '=', userId).execute();
    return rows.map((row) => row.follow_user_id);
  }

  /** Everyone who follows `userId`, in batches by row id (a popular author has many fans). */
  async *followerBatches(userId: string, batchSize = 1000): AsyncGenerator<string[]> {
    let after = '0';
    for (;;) {
      const rows = await this.db
        .selectFrom('tb_follow')
        .select(['id', 'user_id'])
        .where('follow_user_id', '=', userId)
        .where('id', '>', after)
        .orderBy('id')
        .limit(batchSize)
        .execute();
      if (rows.length === 0) return;
      yield rows.map((row) => row.user_id);
      after = rows[rows.length - 1]!.id;
      if (rows.length < batchSize) return;
    }
  }
}
