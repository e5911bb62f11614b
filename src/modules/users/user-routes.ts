import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ok } from '../../http/result.js';
import { EmptyResult, IdParams, ResultOf } from '../../http/schemas.js';
import { currentUser } from './auth-hooks.js';
import { USER_MESSAGES } from './messages.js';
import type { UserService } from './user-service.js';
import { SessionUserSchema, UserSummarySchema } from './user-schemas.js';

/** Mainland-China mobile numbers: 11 digits, 1 then 3-9. */
const Phone = Type.String({
  pattern: '^1[3-9][0-9]{9}$',
  errorMessage: USER_MESSAGES.phoneFormat.texts,
});
const Code = Type.String({ pattern: '^[0-9]{6}$', errorMessage: USER_MESSAGES.codeFormat.texts });

export const userRoutes: FastifyPluginAsyncTypebox<{ service: UserService }> = async (app, { service }) => {
  app.post(
    '/user/code',
    { config: { public: true }, schema: { summary: 'Send a login code by SMS', querystring: Type.Object({ phone: Phone }), response: { 200: EmptyResult } } },
    async (request) => {
      await service.sendCode(request.query.phone, request.ip);
      return ok();
    },
  );

  app.post(
    '/user/login',
    {
      config: { public: true },
      schema: {
        summary: 'Log in with the SMS code: data = the session token',
        body: Type.Object({
          phone: Phone,
          code: Code,
          // hmdp's form also posts a password field; password login is not offered.
          password: Type.Optional(Type.String({ maxLength: 128 })),
        }),
        response: { 200: ResultOf(Type.String({ description: 'the session token' })) },
      },
    },
    async (request) => ok(await service.login(request.body.phone, request.body.code)),
  );

  app.post('/user/logout', { schema: { summary: 'End my session', response: { 200: EmptyResult } } }, async (request) => {
    if (request.sessionToken !== null && request.user !== null) await service.logout(request.sessionToken, request.user.id);
    return ok();
  });

  // After a lost phone or a shared computer: every session of the user ends, on every device.
  app.post(
    '/user/logout-all',
    { schema: { summary: 'End every session of mine (log out everywhere): data = how many ended', response: { 200: ResultOf(Type.Integer()) } } },
    async (request) => ok(await service.logoutEverywhere(currentUser(request).id)),
  );

  // {id, nickName, icon} as in hmdp, plus `role` ('user' | 'admin') for the front end's admin link.
  app.get('/user/me', { schema: { summary: 'The logged-in user (with role)', response: { 200: ResultOf(SessionUserSchema) } } }, async (request) =>
    ok(currentUser(request)),
  );

  app.get('/user/info/:id', { schema: { summary: "A user's profile details", params: IdParams } }, async (request) =>
    ok(await service.getInfo(request.params.id)),
  );

  app.get(
    '/user/:id',
    { schema: { summary: "A user's public name and icon", params: IdParams, response: { 200: ResultOf(UserSummarySchema) } } },
    async (request) => ok(await service.getUser(request.params.id)),
  );
};
