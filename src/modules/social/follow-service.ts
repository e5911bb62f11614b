import { invalid, notFound } from '../../lib/refusals/index.js';
import type { RedisClient } from '../../infra/redis.js';
import type { UserRepository } from '../users/user-repository.js';
import type { UserSummary } from '../users/session-store.js';
import type { FollowRepository } from './follow-repository.js';
import { defineSocialScripts, type SocialScripts } from './scripts.js';
import { FOLLOWS_MARKER, followsKey } from './keys.js';
import { SOCIAL_MESSAGES } from './messages.js';

/**
 * Follows (hmdp "好友关注"). tb_follow is the source of truth; `follows:{userId}` sets are a
 * read model, updated after each write when present and rebuilt from MySQL when missing.
 *
 * Common follows: hmdp runs SINTER on two users' sets. Two users' keys hash to different
 * Redis Cluster slots (there is no hash tag that would co-locate every pair), so this reads both
 * sets (SMEMBERS, each a single-key command) and intersects them here; sets are bounded by the
 * number of people one user follows, so this stays cheap.
 *
 * Known window: a rebuild that read tb_follow just before a concurrent unfollow committed can
 * store the old followee after the writer found no set to update; the next rebuild (the set has
 * no TTL, so only after it is deleted) corrects it. Writes never create a partial set.
 */
export class FollowService {
  private readonly scripts: SocialScripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly follows: FollowRepository,
    private readonly users: UserRepository,
  ) {
    this.scripts = defineSocialScripts(redis);
  }

  async follow(userId: string, followeeId: string, isFollow: boolean): Promise<void> {
    if (userId === followeeId) throw invalid(SOCIAL_MESSAGES.followYourself());
    if (isFollow) {
      if (!(await this.users.findById(followeeId))) throw notFound(SOCIAL_MESSAGES.userNotFound({ id: followeeId }));
      await this.follows.follow(userId, followeeId);
      await this.scripts.setIfExists(followsKey(userId), 'add', followeeId);
    } else {
      await this.follows.unfollow(userId, followeeId);
      await this.scripts.setIfExists(followsKey(userId), 'remove', followeeId);
    }
  }

  async isFollowing(userId: string, followeeId: string): Promise<boolean> {
    await this.ensureLoaded(userId);
    return (await this.redis.sismember(followsKey(userId), followeeId)) === 1;
  }

  /** The users both `userId` and `otherId` follow. */
  async common(userId: string, otherId: string): Promise<UserSummary[]> {
    if (!(await this.users.findById(otherId))) throw notFound(SOCIAL_MESSAGES.userNotFound({ id: otherId }));
    const [mine, theirs] = await Promise.all([this.followeeIds(userId), this.followeeIds(otherId)]);
    const theirSet = new Set(theirs);
    const ids = mine.filter((id) => theirSet.has(id)).sort((a, b) => Number(a) - Number(b));
    const rows = await this.users.findByIds(ids);
    const byId = new Map(rows.map((row) => [row.id, row]));
    return ids.flatMap((id) => {
      const row = byId.get(id);
      return row ? [{ id: row.id, nickName: row.nick_name, icon: row.icon }] : [];
    });
  }

  async followeeIds(userId: string): Promise<string[]> {
    await this.ensureLoaded(userId);
    return (await this.redis.smembers(followsKey(userId))).filter((id) => id !== FOLLOWS_MARKER);
  }

  /** Everyone following `userId`, in batches (from MySQL: the feed's fan-out list). */
  followerBatches(userId: string): AsyncGenerator<string[]> {
    return this.follows.followerBatches(userId);
  }

  private async ensureLoaded(userId: string): Promise<void> {
    const key = followsKey(userId);
    if ((await this.redis.exists(key)) === 1) return;
    const ids = await this.follows.followees(userId);
    await this.redis.sadd(key, FOLLOWS_MARKER, ...ids);
  }
}
