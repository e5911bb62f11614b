import { Type } from 'typebox';
import { Id, Timestamp } from '../../lib/wire/index.js';

// What the blog routes answer (their response schemas).

/** A blog with its author's name and icon and whether the viewer likes it (blog-service.ts BlogView). */
export const BlogViewSchema = Type.Object({
  id: Id,
  shopId: Id,
  userId: Id,
  title: Type.String(),
  images: Type.String({ description: 'comma-separated picture names' }),
  content: Type.String(),
  liked: Type.Integer(),
  comments: Type.Integer(),
  createTime: Timestamp,
  updateTime: Timestamp,
  name: Type.String({ description: "the author's nick name" }),
  icon: Type.String({ description: "the author's icon" }),
  isLike: Type.Boolean({ description: 'whether the viewer likes it (false for no viewer)' }),
});

/** One page of the feed and the cursor of the next (blog-service.ts FeedPage): hmdp's ScrollResult. */
export const FeedPageSchema = Type.Object({
  list: Type.Array(BlogViewSchema),
  minTime: Type.Integer({ description: 'the lastId of the next request' }),
  offset: Type.Integer({ description: 'the offset of the next request' }),
});
