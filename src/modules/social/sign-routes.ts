import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ok } from '../../http/result.js';
import { currentUser } from '../users/auth.js';
import type { SignService } from './sign-service.js';
import { SOCIAL_MESSAGES } from './messages.js';

/** hmdp's sign-in routes (login required). */
export const signRoutes: FastifyPluginAsyncTypebox<{ service: SignService }> = async (app, { service }) => {
  app.post('/user/sign', { schema: { summary: 'Sign in for today (Asia/Shanghai days)' } }, async (request) => ok(await service.sign(currentUser(request).id)));

  app.get('/user/sign/count', { schema: { summary: 'My sign-in streak ending today' } }, async (request) => ok(await service.streak(currentUser(request).id)));

  app.get(
    '/user/sign/month',
    {
      schema: {
        summary: 'My sign-ins of a month (default: this month)',
        querystring: Type.Object({ month: Type.Optional(Type.String({ pattern: '^[0-9]{6}$', errorMessage: SOCIAL_MESSAGES.monthFormat.texts })) }),
      },
    },
    async (request) => ok(await service.month(currentUser(request).id, request.query.month)),
  );
};
