import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { uploadNameOfShown, viaCompatSurface } from '../../http/hmdp-compat.js';
import { ok } from '../../http/result.js';
import { Current, IdBody, IdParams, IdString, ResultOf, Text } from '../../http/schemas.js';
import { Id } from '../../lib/wire/index.js';
import { currentUser } from '../users/auth-hooks.js';
import { UserSummarySchema } from '../users/user-schemas.js';
import { BlogViewSchema, FeedPageSchema } from './blog-schemas.js';
import type { BlogService } from './blog-service.js';
import { SOCIAL_MESSAGES } from './messages.js';
import type { WriteLimits } from './write-limits.js';

/** A like's toggle: whether I like the blog now, and its likes. */
const LikeState = Type.Object({ isLike: Type.Boolean(), liked: Type.Integer() });

/**
 * hmdp's blog routes. Only `GET /blog/hot` is public (hmdp's list); the rest need a login.
 * Static paths are declared before `/blog/:id`, and find-my-way prefers them anyway.
 */
export const blogRoutes: FastifyPluginAsyncTypebox<{ service: BlogService; limits: WriteLimits }> = async (app, { service, limits }) => {
  app.post(
    '/blog',
    {
      schema: {
        summary: "Write a blog about a shop (pushed to the followers' feeds)",
        body: Type.Object({
          shopId: IdBody,
          title: Text({ maxLength: 255 }),
          content: Text({ maxLength: 2048, multiline: true }),
          // Comma-separated names returned by POST /upload/blog (hmdp's format): at most 9, each an
          // upload of the author no other blog shows (checked by the service). The course's editor
          // on the HMDP_COMPAT surface names them by their /imgs URLs (UploadNameOf).
          images: Type.Optional(Type.String({ maxLength: 2048, pattern: '^[\\w/.,-]*$', errorMessage: SOCIAL_MESSAGES.imagePaths.texts })),
        }),
        response: { 200: ResultOf(Id) },
      },
      preHandler: limits.preHandler('blog'),
    },
    async (request) => ok(await service.create(currentUser(request), request.body, viaCompatSurface(request) ? uploadNameOfShown : undefined)),
  );

  app.put(
    '/blog/like/:id',
    { schema: { summary: 'Like or unlike a blog (toggle)', params: IdParams, response: { 200: ResultOf(LikeState) } }, preHandler: limits.preHandler('like') },
    async (request) => ok(await service.toggleLike(request.params.id, currentUser(request).id)),
  );

  app.get(
    '/blog/likes/:id',
    { schema: { summary: 'The first five users who liked a blog', params: IdParams, response: { 200: ResultOf(Type.Array(UserSummarySchema)) } } },
    async (request) => ok(await service.likers(request.params.id)),
  );

  app.get(
    '/blog/hot',
    {
      config: { public: true },
      schema: {
        summary: 'Most liked blogs, 10 a page',
        querystring: Type.Object({ current: Current }),
        response: { 200: ResultOf(Type.Array(BlogViewSchema)) },
      },
    },
    async (request) => ok(await service.hot(request.query.current, request.user)),
  );

  app.get(
    '/blog/of/me',
    { schema: { summary: 'My blogs, newest first', querystring: Type.Object({ current: Current }), response: { 200: ResultOf(Type.Array(BlogViewSchema)) } } },
    async (request) => {
      const me = currentUser(request);
      return ok(await service.ofUser(me.id, request.query.current, me));
    },
  );

  app.get(
    '/blog/of/user',
    {
      schema: {
        summary: "A user's blogs, newest first",
        querystring: Type.Object({ id: IdString, current: Current }),
        response: { 200: ResultOf(Type.Array(BlogViewSchema)) },
      },
    },
    async (request) => ok(await service.ofUser(request.query.id, request.query.current, currentUser(request))),
  );

  app.get(
    '/blog/of/follow',
    {
      schema: {
        summary: 'My feed: blogs of the users I follow (cursor: lastId = previous minTime, offset)',
        querystring: Type.Object({
          // hmdp's front end starts with lastId = now (ms) and offset 0, then echoes minTime/offset.
          lastId: Type.Optional(Type.Integer({ minimum: 0, maximum: 1e15, errorMessage: SOCIAL_MESSAGES.feedLastId.texts })),
          offset: Type.Integer({ minimum: 0, maximum: 100_000, default: 0, errorMessage: SOCIAL_MESSAGES.wholeNumber.texts }),
        }),
        response: { 200: ResultOf(FeedPageSchema) },
      },
    },
    async (request) => ok(await service.feed(currentUser(request).id, request.query.lastId, request.query.offset)),
  );

  app.get(
    '/blog/:id',
    { schema: { summary: 'A blog with its author and whether I like it', params: IdParams, response: { 200: ResultOf(BlogViewSchema) } } },
    async (request) => ok(await service.get(request.params.id, currentUser(request))),
  );
};
