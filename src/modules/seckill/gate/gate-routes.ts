import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Challenge } from 'altcha-lib';
import { ok } from '../../../http/result.js';
import { IdParams, ResultOf } from '../../../http/schemas.js';
import { Timestamp } from '../../../lib/wire/index.js';
import { currentUser } from '../../users/auth-hooks.js';
import type { PurchaseGate } from './purchase-gate.js';

/** An ALTCHA proof-of-work challenge (altcha-lib v2's Challenge: its library reads it). */
const CaptchaChallenge = Type.Unsafe<Challenge>(
  Type.Object({
    parameters: Type.Object({}, { additionalProperties: true, description: "altcha-lib's ChallengeParameters, expiresAt among them" }),
    signature: Type.Optional(Type.String()),
  }),
);

/** A purchase token (purchase-gate.ts IssuedToken). */
const IssuedTokenSchema = Type.Object({ token: Type.String({ description: 'the X-Purchase-Token of the order' }), expiresAt: Timestamp });

/** The purchase gate's routes (purchase-gate.ts): a captcha, then a purchase token. */
export const gateRoutes: FastifyPluginAsyncTypebox<{ gate: PurchaseGate }> = async (app, { gate }) => {
  app.get(
    '/voucher-order/seckill/:id/captcha',
    {
      schema: {
        summary:
          "A captcha for a sale that asks for one: data = an ALTCHA proof-of-work challenge (v2: {parameters, signature}), good once, for this user and sale, until parameters.expiresAt; its solution goes in the token request's body.captcha",
        params: IdParams,
        response: { 200: ResultOf(CaptchaChallenge) },
      },
    },
    async (request) => ok(await gate.challenge(currentUser(request).id, request.params.id)),
  );

  app.post(
    '/voucher-order/seckill/:id/token',
    {
      schema: {
        summary:
          'A purchase token for a gated sale (header X-Purchase-Token of the order): once the window is open (before: 425 + Retry-After), after the captcha if the sale has one (403 when wrong)',
        params: IdParams,
        body: Type.Object(
          {
            captcha: Type.Optional(
              Type.String({ maxLength: 4096, description: 'the solved challenge of GET .../captcha: the ALTCHA payload, base64 JSON {challenge, solution}' }),
            ),
          },
          { additionalProperties: false, description: 'optional: no body at all is {}' },
        ),
        response: { 200: ResultOf(IssuedTokenSchema) },
      },
      // No body (a sale without captcha) is an empty one, before the schema is checked.
      preValidation: (request, _reply, done) => {
        if (request.body === undefined) request.body = {};
        done();
      },
    },
    async (request) => ok(await gate.issue(currentUser(request).id, request.params.id, request.body.captcha)),
  );
};
