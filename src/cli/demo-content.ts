import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { Db } from '../infra/db.js';
import type { RedisClient } from '../infra/redis.js';
import { feedKey, followsKey, likedKey } from '../modules/social/index.js';
import { SHOP_IMAGES_PER_TYPE, SHOP_TYPES, demoBranches, demoSaleStates, demoShopImages, shopImageName } from '../infra/seed/demo-data.js';
import { demoPicture } from '../infra/seed/demo-images.js';

/**
 * What a newcomer sees after the quick start, like the course's SQL: blogs with pictures and
 * likes on the home page, users following each other (so the feed has entries), shop pictures.
 * Loaded by `npm run seed` after loadDemoData (the tests load only that, and their own blogs).
 * It lives with the command, above the modules, because it fills the social module's Redis keys.
 */

/** Demo blogs: fixed ids, each by a demo user about a demo shop, with its pictures, likers and age. */
export const DEMO_BLOGS = [
  {
    id: '1',
    user_id: '2',
    shop_id: '1',
    title: '无尽浪漫的夜晚丨在万花丛中摇晃着红酒杯🍷品战斧牛排🥩',
    content: '生活就是一半烟火·一半诗意，手执烟火谋生活·心怀诗意以谋爱。这家店的环境和菜品都很棒，推荐战斧牛排和芝士焗龙虾。',
    images: 3,
    likers: ['1', '3', '4', '5'],
    daysAgo: 6,
  },
  {
    id: '2',
    user_id: '1',
    shop_id: '2',
    title: '人均30💰杭州这家港式茶餐厅我疯狂打call‼️',
    content: '菠萝包外酥里软，冻柠茶够冰够酸，丝袜奶茶很顺滑。工作日中午人不多，周末记得早点去排队。',
    images: 2,
    likers: ['2', '3'],
    daysAgo: 5,
  },
  {
    id: '3',
    user_id: '3',
    shop_id: '61',
    title: '运河边的宝藏小店，一个人也能吃得很开心',
    content: '坐在窗边能看到运河上的船，菜量刚好，味道偏清淡，适合不能吃辣的朋友。',
    images: 2,
    likers: ['1', '2', '4'],
    daysAgo: 4,
  },
  {
    id: '4',
    user_id: '4',
    shop_id: '67',
    title: '下班后来唱两个小时，包厢干净音响好🎤',
    content: '工作日晚上的欢唱套餐很划算，饮料小吃都有，服务员态度也很好。',
    images: 1,
    likers: ['5'],
    daysAgo: 3,
  },
  {
    id: '5',
    user_id: '5',
    shop_id: '73',
    title: '第一次来就办了卡：发型师超级耐心✂️',
    content: '沟通了很久想要的效果，剪完特别满意，洗头的按摩也很舒服。',
    images: 2,
    likers: ['1', '2', '3', '4'],
    daysAgo: 2,
  },
  {
    id: '6',
    user_id: '1',
    shop_id: '79',
    title: '周末带娃的好去处，室内不怕晒不怕雨',
    content: '场地很大，设施新，有专门的低龄区，工作人员会帮忙看着，家长可以在旁边喝咖啡。',
    images: 3,
    likers: ['3'],
    daysAgo: 1,
  },
  {
    id: '7',
    user_id: '2',
    shop_id: '85',
    title: '微醺的夜晚，来一杯精酿🍺',
    content: '十几种精酿可以选，老板会根据口味推荐，驻唱小哥唱得很好听。',
    images: 1,
    likers: [],
    daysAgo: 0,
  },
];

/** Who follows whom (user_id follows follow_user_id). */
export const DEMO_FOLLOWS: Array<[string, string]> = [
  ['1', '2'],
  ['1', '3'],
  ['2', '1'],
  ['3', '1'],
  ['3', '2'],
  ['4', '1'],
  ['5', '2'],
];

/** A blog picture's upload name, shaped as POST /upload/blog hands them out (/blogs/{d1}/{d2}/{uuid}.png). */
export function demoBlogImageName(blogId: string, n: number): string {
  const serial = (Number(blogId) * 16 + n).toString(16).padStart(12, '0');
  const uuid = `00000000-0000-4000-8000-${serial}`;
  return `/blogs/${Number(blogId) % 16}/${n % 16}/${uuid}.png`;
}

/**
 * A demo blog's pictures as tb_blog.images holds them: the path they are served at, `/imgs` + the
 * upload name, as the course's data stores its blogs' pictures (and the demo shops theirs). The
 * course's pages use it as the img src unchanged, and its nginx serves `/imgs/` from its root,
 * where the course keeps the upload folder; the web app shows `/imgs/…` as it is.
 */
const storedImages = (names: readonly string[]): string => names.map((name) => `/imgs${name}`).join(',');

/** New rows: shops near the default point, seckill vouchers in the other states, blogs, follows. */
export interface ContentReport {
  branches: number;
  saleVouchers: number;
  blogs: number;
  follows: number;
}

/**
 * Loads the demo blogs (their pictures recorded in tb_upload as their authors' uploads, attached
 * to them, as the app requires), follows, likes (tb_blog.liked and the `blog:liked:{id}` sets),
 * the followers' inboxes, and writes the pictures under `uploadDir`. Idempotent: fixed ids and
 * INSERT IGNORE, ZADD of fixed scores; rows users changed stay as they are.
 */
export async function loadDemoContent(db: Db, redis: RedisClient, uploadDir: string, now = new Date()): Promise<ContentReport> {
  const root = resolve(uploadDir);
  const pictures = new Map<string, Buffer>();
  for (const [index, type] of SHOP_TYPES.entries()) {
    for (let n = 0; n < SHOP_IMAGES_PER_TYPE; n++) pictures.set(shopImageName(type.id, n), demoPicture({ hue: index * 36, variant: n }));
  }
  const blogImages = new Map(DEMO_BLOGS.map((blog) => [blog.id, Array.from({ length: blog.images }, (_, n) => demoBlogImageName(blog.id, n))]));
  for (const blog of DEMO_BLOGS) {
    for (const [n, name] of blogImages.get(blog.id)!.entries())
      pictures.set(name, demoPicture({ hue: Number(blog.id) * 47, variant: n, width: 480, height: 360 }));
  }
  for (const [name, bytes] of pictures) {
    const path = join(root, name);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, bytes);
  }

  const createdAt = (blog: (typeof DEMO_BLOGS)[number]) => new Date(now.getTime() - blog.daysAgo * 86_400_000 - Number(blog.id) * 3_600_000);
  const counts = await db.transaction().execute(async (trx) => {
    const branches = await trx.insertInto('tb_shop').ignore().values(demoBranches()).executeTakeFirst();
    const sale = demoSaleStates(now);
    const saleVouchers = await trx.insertInto('tb_voucher').ignore().values(sale.vouchers).executeTakeFirst();
    await trx.insertInto('tb_seckill_voucher').ignore().values(sale.seckill).execute();
    // The demo shops get their pictures; pictures a user set are kept.
    for (const [id, images] of demoShopImages()) {
      await trx.updateTable('tb_shop').set({ images }).where('id', '=', id).where('images', '=', '').execute();
    }
    const blogs = await trx
      .insertInto('tb_blog')
      .ignore()
      .values(
        DEMO_BLOGS.map((blog) => ({
          id: blog.id,
          shop_id: blog.shop_id,
          user_id: blog.user_id,
          title: blog.title,
          content: blog.content,
          images: storedImages(blogImages.get(blog.id)!),
          liked: blog.likers.length,
          create_time: createdAt(blog),
        })),
      )
      .executeTakeFirst();
    // Demo blogs seeded when they stored the bare upload names get the served paths.
    for (const blog of DEMO_BLOGS) {
      const names = blogImages.get(blog.id)!;
      await trx
        .updateTable('tb_blog')
        .set({ images: storedImages(names) })
        .where('id', '=', blog.id)
        .where('images', '=', names.join(','))
        .execute();
    }
    // Only blogs that are the demo's (an id a user's blog already took is left alone): their
    // pictures are their authors' uploads, attached to them, as POST /blog requires.
    const ours = await trx
      .selectFrom('tb_blog')
      .select(['id', 'user_id', 'images'])
      .where(
        'id',
        'in',
        DEMO_BLOGS.map((blog) => blog.id),
      )
      .execute();
    const demoIds = ours.filter((row) => row.images === storedImages(blogImages.get(row.id) ?? [])).map((row) => row.id);
    const uploads = DEMO_BLOGS.filter((blog) => demoIds.includes(blog.id)).flatMap((blog) =>
      blogImages
        .get(blog.id)!
        .map((name) => ({ user_id: blog.user_id, name, size: pictures.get(name)!.length, blog_id: blog.id, create_time: createdAt(blog) })),
    );
    if (uploads.length > 0) await trx.insertInto('tb_upload').ignore().values(uploads).execute();
    const follows = await trx
      .insertInto('tb_follow')
      .ignore()
      .values(DEMO_FOLLOWS.map(([user_id, follow_user_id]) => ({ user_id, follow_user_id })))
      .executeTakeFirst();
    const rows = (result: { numInsertedOrUpdatedRows?: bigint }) => Number(result.numInsertedOrUpdatedRows ?? 0n);
    return { branches: rows(branches), saleVouchers: rows(saleVouchers), blogs: rows(blogs), follows: rows(follows), demoIds };
  });

  // Redis: likers with the time of their like, inboxes of the followers; the follow sets are
  // dropped so the app rebuilds them from tb_follow (keys.ts FOLLOWS_MARKER).
  for (const blog of DEMO_BLOGS.filter((candidate) => counts.demoIds.includes(candidate.id))) {
    const at = createdAt(blog).getTime();
    if (blog.likers.length > 0) await redis.zadd(likedKey(blog.id), ...blog.likers.flatMap((user, i) => [at + (i + 1) * 60_000, user]));
    for (const [follower, followee] of DEMO_FOLLOWS) if (followee === blog.user_id) await redis.zadd(feedKey(follower), at, blog.id);
  }
  for (const user of new Set(DEMO_FOLLOWS.map(([follower]) => follower))) await redis.del(followsKey(user));
  return { branches: counts.branches, saleVouchers: counts.saleVouchers, blogs: counts.blogs, follows: counts.follows };
}
