import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ok } from '../../http/result.js';
import { EmptyResult, IdParams, IdString, ResultOf } from '../../http/schemas.js';
import { currentUser } from '../users/auth-hooks.js';
import { UserSummarySchema } from '../users/user-schemas.js';
import type { FollowService } from './follow-service.js';
import { SOCIAL_MESSAGES } from './messages.js';
import type { WriteLimits } from './write-limits.js';

/** hmdp's follow routes; all need a login. */
export const followRoutes: FastifyPluginAsyncTypebox<{ service: FollowService; limits: WriteLimits }> = async (app, { service, limits }) => {
  app.put(
    '/follow/:id/:isFollow',
    {
      schema: {
        summary: 'Follow (true) or unfollow (false) a user',
        params: Type.Object({
          id: IdString,
          isFollow: Type.Union([Type.Literal('true'), Type.Literal('false')], { errorMessage: SOCIAL_MESSAGES.trueOrFalse.texts }),
        }),
        response: { 200: EmptyResult },
      },
      preHandler: limits.preHandler('follow'),
    },
    async (request) => {
      await service.follow(currentUser(request).id, request.params.id, request.params.isFollow === 'true');
      return ok();
    },
  );

  app.get(
    '/follow/or/not/:id',
    { schema: { summary: 'Whether I follow a user', params: IdParams, response: { 200: ResultOf(Type.Boolean()) } } },
    async (request) => ok(await service.isFollowing(currentUser(request).id, request.params.id)),
  );

  app.get(
    '/follow/common/:id',
    { schema: { summary: 'Users both I and another user follow', params: IdParams, response: { 200: ResultOf(Type.Array(UserSummarySchema)) } } },
    async (request) => ok(await service.common(currentUser(request).id, request.params.id)),
  );
};
