import { invalid, notFound } from '../../lib/refusals/index.js';
import type { RedisClient } from '../../infra/redis.js';
import type { FollowService } from './follow-service.js';
import type { UserRepository } from '../users/user-repository.js';
import type { SessionUser, UserSummary } from '../users/session-store.js';
import type { BlogRepository, BlogRow } from './blog-repository.js';
import { defineSocialScripts, type SocialScripts } from './scripts.js';
import { feedKey, likedKey } from './keys.js';
import { SOCIAL_MESSAGES } from './messages.js';
import { BLOG_IMAGE_NAME } from './upload-service.js';

/** hmdp's page size for blogs (SystemConstants.MAX_PAGE_SIZE) and the feed. */
export const BLOG_PAGE_SIZE = 10;
/** How many likers `GET /blog/likes/{id}` shows (hmdp: the first five). */
export const LIKERS_SHOWN = 5;
export const MAX_IMAGES = 9;

/** A blog as hmdp's front end reads it: the row plus its author's name and icon and `isLike`. */
export interface BlogView {
  id: string;
  shopId: string;
  userId: string;
  title: string;
  images: string;
  content: string;
  liked: number;
  comments: number;
  createTime: string;
  updateTime: string;
  name: string;
  icon: string;
  isLike: boolean;
}

export interface NewBlogFields {
  shopId: string;
  title: string;
  content: string;
  images?: string;
}

/**
 * The upload's name of an image as the client names it: the name POST /upload/blog handed out,
 * by default; the course's blog editor (HMDP_COMPAT) names it by the URL it shows it at, which
 * its routes translate (the blog keeps the names as sent: its pages show images by those URLs).
 */
export type UploadNameOf = (shown: string) => string;

const sameName: UploadNameOf = (shown) => shown;

/** One page of the feed and the cursor of the next: hmdp's ScrollResult. */
export interface FeedPage {
  list: BlogView[];
  /** The `lastId` of the next request: the smallest score on this page. */
  minTime: number;
  /** The `offset` of the next request: entries already seen with score = minTime. */
  offset: number;
}

export interface BlogServiceDeps {
  redis: RedisClient;
  blogs: BlogRepository;
  users: UserRepository;
  follows: FollowService;
  feedMaxLength: number;
  /** Milliseconds since the epoch (tests pin it to give several blogs one timestamp). */
  now?: () => number;
}

/** Blogs (达人探店), likes on a sorted set, and the push-model feed. */
export class BlogService {
  private readonly redis: RedisClient;
  private readonly blogs: BlogRepository;
  private readonly users: UserRepository;
  private readonly follows: FollowService;
  private readonly feedMaxLength: number;
  private readonly now: () => number;
  private readonly scripts: SocialScripts;

  constructor(deps: BlogServiceDeps) {
    ({ redis: this.redis, blogs: this.blogs, users: this.users, follows: this.follows, feedMaxLength: this.feedMaxLength } = deps);
    this.now = deps.now ?? Date.now;
    this.scripts = defineSocialScripts(this.redis);
  }

  /**
   * Saves the blog, then pushes its id to every follower's inbox (score = publish time in ms),
   * each inbox trimmed to `feedMaxLength`. One single-key script per follower: cluster-safe,
   * and auto-pipelined by the client.
   */
  async create(author: SessionUser, fields: NewBlogFields, uploadNameOf: UploadNameOf = sameName): Promise<string> {
    const { shown, uploads } = parseImages(fields.images ?? '', uploadNameOf);
    if (!(await this.blogs.shopExists(fields.shopId))) throw invalid(SOCIAL_MESSAGES.blogShopMissing({ shopId: fields.shopId }));
    const blog = { shop_id: fields.shopId, user_id: author.id, title: fields.title, content: fields.content, images: shown.join(',') };
    const id = await this.blogs.insertWithImages(blog, uploads);
    if (id === null) throw invalid(SOCIAL_MESSAGES.imagesTaken());
    const score = this.now();
    for await (const followers of this.follows.followerBatches(author.id)) {
      await Promise.all(followers.map((follower) => this.scripts.feedPush(feedKey(follower), score, id, this.feedMaxLength)));
    }
    return id;
  }

  async get(id: string, viewer: SessionUser | null): Promise<BlogView> {
    const row = await this.blogs.findById(id);
    if (!row) throw notFound(SOCIAL_MESSAGES.blogNotFound({ id }));
    return (await this.toViews([row], viewer))[0]!;
  }

  async hot(current: number, viewer: SessionUser | null): Promise<BlogView[]> {
    return this.toViews(await this.blogs.pageHot((current - 1) * BLOG_PAGE_SIZE, BLOG_PAGE_SIZE), viewer);
  }

  async ofUser(userId: string, current: number, viewer: SessionUser | null): Promise<BlogView[]> {
    return this.toViews(await this.blogs.pageByUser(userId, (current - 1) * BLOG_PAGE_SIZE, BLOG_PAGE_SIZE), viewer);
  }

  /**
   * Likes or unlikes (whichever the user has not done yet). like-toggle.lua decides atomically
   * per (user, blog). tb_blog.liked is then set to ZCARD read under the blog's row lock: ±1
   * updates would not do, because an unlike's UPDATE can reach MySQL before the like it undoes
   * (the column cannot go below 0, so the -1 would be lost), and writing ZCARD without the lock
   * could store an older count after a newer one. Under the lock the last writer always reads
   * the final set, so Redis and MySQL agree once concurrent toggles have returned, and any later
   * toggle repairs an earlier drift. If MySQL fails, the Redis change is undone (best effort) and
   * the request fails.
   */
  async toggleLike(blogId: string, userId: string): Promise<{ isLike: boolean; liked: number }> {
    if (!(await this.blogs.findById(blogId))) throw notFound(SOCIAL_MESSAGES.blogNotFound({ id: blogId }));
    const key = likedKey(blogId);
    const isLike = (await this.scripts.likeToggle(key, userId, this.now())) === 1;
    let liked: number | undefined;
    try {
      liked = await this.blogs.syncLiked(blogId, () => this.redis.zcard(key));
    } catch (err) {
      await this.scripts.likeToggle(key, userId, this.now()).catch(() => undefined);
      throw err;
    }
    if (liked === undefined) throw notFound(SOCIAL_MESSAGES.blogNotFound({ id: blogId }));
    return { isLike, liked };
  }

  /** The first `LIKERS_SHOWN` users who like the blog, in the order they liked it. */
  async likers(blogId: string): Promise<UserSummary[]> {
    if (!(await this.blogs.findById(blogId))) throw notFound(SOCIAL_MESSAGES.blogNotFound({ id: blogId }));
    const ids = await this.redis.zrange(likedKey(blogId), 0, LIKERS_SHOWN - 1);
    const rows = await this.users.findByIds(ids);
    const byId = new Map(rows.map((row) => [row.id, row]));
    // Keep Redis' order (hmdp needed ORDER BY FIELD for this; a map lookup does it here).
    return ids.flatMap((id) => {
      const row = byId.get(id);
      return row ? [{ id: row.id, nickName: row.nick_name, icon: row.icon }] : [];
    });
  }

  /**
   * hmdp's scrolling feed: ZREVRANGEBYSCORE feed:{me} lastId 0 WITHSCORES LIMIT offset 10.
   * The next cursor is (minTime = the page's smallest score, offset = how many entries on the
   * page have that score). When the whole page shares the score it started from, those entries
   * come on top of the previous offset (hmdp restarted the count and repeated them).
   */
  async feed(userId: string, lastId: number | undefined, offset: number): Promise<FeedPage> {
    const max = lastId === undefined ? '+inf' : String(lastId);
    const flat = await this.redis.zrevrangebyscore(feedKey(userId), max, 0, 'WITHSCORES', 'LIMIT', offset, BLOG_PAGE_SIZE);
    if (flat.length === 0) return { list: [], minTime: lastId ?? 0, offset };
    const ids: string[] = [];
    let minTime = 0;
    let sameScore = 0;
    for (let i = 0; i + 1 < flat.length; i += 2) {
      ids.push(flat[i]!);
      const score = Number(flat[i + 1]);
      if (score === minTime) sameScore += 1;
      else {
        minTime = score;
        sameScore = 1;
      }
    }
    const nextOffset = lastId !== undefined && minTime === lastId ? offset + sameScore : sameScore;
    const rows = await this.blogs.findByIds(ids);
    const byId = new Map(rows.map((row) => [row.id, row]));
    // Deleted blogs drop out of the page; the cursor still moves past them.
    const ordered = ids.flatMap((id) => byId.get(id) ?? []);
    return { list: await this.toViews(ordered, { id: userId }), minTime, offset: nextOffset };
  }

  private async toViews(rows: BlogRow[], viewer: Pick<UserSummary, 'id'> | null): Promise<BlogView[]> {
    if (rows.length === 0) return [];
    const authors = await this.users.findByIds([...new Set(rows.map((row) => row.user_id))]);
    const byId = new Map(authors.map((author) => [author.id, author]));
    const liked = viewer ? await Promise.all(rows.map((row) => this.redis.zscore(likedKey(row.id), viewer.id))) : rows.map(() => null);
    return rows.map((row, i) => {
      const author = byId.get(row.user_id);
      return {
        id: row.id,
        shopId: row.shop_id,
        userId: row.user_id,
        title: row.title,
        images: row.images,
        content: row.content,
        liked: row.liked,
        comments: row.comments,
        createTime: row.create_time.toISOString(),
        updateTime: row.update_time.toISOString(),
        name: author?.nick_name ?? '',
        icon: author?.icon ?? '',
        isLike: liked[i] !== null,
      };
    });
  }
}

/**
 * The images of a new blog: comma-separated names (see UploadNameOf), at most MAX_IMAGES, no
 * upload twice. `shown` is what the blog stores and shows, `uploads` the uploads' names; whether
 * the author uploaded them is checked when they are attached.
 */
function parseImages(list: string, uploadNameOf: UploadNameOf): { shown: string[]; uploads: string[] } {
  const shown = list
    .split(',')
    .map((image) => image.trim())
    .filter((image) => image !== '');
  if (shown.length > MAX_IMAGES) throw invalid(SOCIAL_MESSAGES.tooManyImages({ max: MAX_IMAGES }));
  const uploads = shown.map((image) => {
    const upload = uploadNameOf(image);
    if (!BLOG_IMAGE_NAME.test(upload)) throw invalid(SOCIAL_MESSAGES.notAnImageName({ name: JSON.stringify(image.slice(0, 80)) }));
    return upload;
  });
  if (new Set(uploads).size !== uploads.length) throw invalid(SOCIAL_MESSAGES.imageTwice());
  return { shown, uploads };
}
