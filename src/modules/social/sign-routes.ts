import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ok } from '../../http/result.js';
import { ResultOf } from '../../http/schemas.js';
import { currentUser } from '../users/auth-hooks.js';
import type { SignService } from './sign-service.js';
import { SOCIAL_MESSAGES } from './messages.js';

/** A user's sign-ins of one month (sign-service.ts SignMonth). */
const SignMonthSchema = Type.Object({
  month: Type.String({ description: 'yyyyMM' }),
  daysInMonth: Type.Integer(),
  signedDays: Type.Array(Type.Integer(), { description: 'days of the month signed in, ascending' }),
  today: Type.Union([Type.Integer(), Type.Null()], { description: "today's day of the month when this is the current month, else null" }),
});

/** hmdp's sign-in routes (login required). */
export const signRoutes: FastifyPluginAsyncTypebox<{ service: SignService }> = async (app, { service }) => {
  app.post(
    '/user/sign',
    { schema: { summary: 'Sign in for today (Asia/Shanghai days)', response: { 200: ResultOf(Type.Object({ alreadySigned: Type.Boolean() })) } } },
    async (request) => ok(await service.sign(currentUser(request).id)),
  );

  app.get(
    '/user/sign/count',
    { schema: { summary: 'My sign-in streak ending today', response: { 200: ResultOf(Type.Integer({ description: 'days' })) } } },
    async (request) => ok(await service.streak(currentUser(request).id)),
  );

  app.get(
    '/user/sign/month',
    {
      schema: {
        summary: 'My sign-ins of a month (default: this month)',
        querystring: Type.Object({ month: Type.Optional(Type.String({ pattern: '^[0-9]{6}$', errorMessage: SOCIAL_MESSAGES.monthFormat.texts })) }),
        response: { 200: ResultOf(SignMonthSchema) },
      },
    },
    async (request) => ok(await service.month(currentUser(request).id, request.query.month)),
  );
};
