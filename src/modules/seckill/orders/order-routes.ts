import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { badRequest } from '../../../http/errors.js';
import { ok } from '../../../http/result.js';
import { Current, IdParams, ResultOf } from '../../../http/schemas.js';
import { Id } from '../../../lib/wire/index.js';
import { currentUser } from '../../users/auth-hooks.js';
import { orderDeadlineMessage } from '../errors/index.js';
import { PURCHASE_TOKEN_HEADER, type PurchaseGate } from '../gate/purchase-gate.js';
import { SECKILL_MESSAGES } from '../messages.js';
import type { KnownSales } from './known-sales.js';
import type { OrderLimits } from './order-limits.js';
import type { OrderPlacement } from './order-placement.js';
import type { UserOrders } from './user-orders.js';
import { OrderListItemSchema, OrderViewSchema } from '../order-views.js';

/** An Idempotency-Key: 1 to 64 visible ASCII characters (no spaces, no control characters). */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,64}$/;

/** The request's Idempotency-Key, if any; a malformed one is a 400. */
function idempotencyKeyOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const value = headers['idempotency-key'];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !IDEMPOTENCY_KEY.test(value)) {
    throw badRequest(SECKILL_MESSAGES.badIdempotencyKey());
  }
  return value;
}

export interface OrderRoutesOptions {
  placement: OrderPlacement;
  userOrders: UserOrders;
  limits: OrderLimits;
  /** Every seckill voucher's id (known-sales.ts). */
  sales: KnownSales;
  gate?: PurchaseGate;
}

export const orderRoutes: FastifyPluginAsyncTypebox<OrderRoutesOptions> = async (app, { placement, userOrders, limits, sales, gate }) => {
  // Each order request's id once issued: the request deadline's 503 names it (the order may exist by then).
  const issuedIds = new WeakMap<FastifyRequest, string>();
  // rateLimit: false: the general per-IP API limit (if on) skips this route, which has its own.
  app.post(
    '/voucher-order/seckill/:id',
    {
      schema: {
        summary:
          'Buy a seckill voucher: data = the order id (refusals: 200 with success false; 429 over a rate limit; 503 when Redis did not answer, saying whether the outcome is unknown). ' +
          'Optional header Idempotency-Key (1-64 visible ASCII): a retry with it returns the same order id for 24 h; 422 when the key was used for another voucher',
        params: IdParams,
        response: { 200: ResultOf(Id) },
      },
      config: { rateLimit: false, deadlineMessage: (request) => orderDeadlineMessage((request.params as { id: string }).id, issuedIds.get(request)) },
    },
    async (request) => {
      const userId = currentUser(request).id;
      const idempotencyKey = idempotencyKeyOf(request.headers);
      // A retry with a key must reach reserve.lua, which returns its order even once sold out.
      if (idempotencyKey === undefined) placement.refuseIfKnownSoldOut(request.params.id);
      // Limits first: a refused request costs no lookup of the sale.
      await limits.check(userId, request.ip, request.params.id);
      // An id that is no sale is refused from memory, before any per-id MySQL lookup.
      await sales.refuseIfUnknown(request.params.id);
      // A gated sale: a purchase token of this user and voucher (purchase-gate.ts), checked in memory.
      const pass = await gate?.check(request.headers[PURCHASE_TOKEN_HEADER] as string | undefined, userId, request.params.id);
      const onOrderId = (orderId: string): void => void issuedIds.set(request, orderId);
      const place = () => placement.place(userId, request.params.id, { idempotencyKey, onOrderId });
      // Spent once the limits let the order through: a token buys one order.
      return ok(await (gate ? gate.spendOn(pass, idempotencyKey, place) : place()));
    },
  );

  // The caller's orders, newest first, 10 a page; `total` counts them all.
  app.get(
    '/voucher-order/of/me',
    {
      schema: {
        summary: 'My orders, newest first, 10 a page (total = all of them)',
        querystring: Type.Object({ current: Current }),
        response: { 200: ResultOf(Type.Array(OrderListItemSchema)) },
      },
    },
    async (request) => {
      const { list, total } = await userOrders.list(currentUser(request).id, request.query.current);
      return ok(list, total);
    },
  );

  // After an "outcome unknown" answer: did that order go through? MySQL first, then Redis's buyer mark.
  app.get(
    '/voucher-order/of/me/voucher/:id',
    {
      schema: {
        summary: 'My order of one voucher (created, paid... or queued: accepted, not yet written); 404 when I have none',
        params: IdParams,
        response: { 200: ResultOf(Type.Union([OrderViewSchema, Type.Object({ voucherId: Id, state: Type.Literal('queued') })])) },
      },
    },
    async (request) => ok(await userOrders.findForVoucher(currentUser(request).id, request.params.id)),
  );

  app.get(
    '/voucher-order/:id',
    {
      schema: { summary: 'One of my orders and its state (queued, created, paid, cancelled)', params: IdParams, response: { 200: ResultOf(OrderViewSchema) } },
    },
    async (request) => ok(await userOrders.get(currentUser(request).id, request.params.id)),
  );

  app.post(
    '/voucher-order/:id/pay',
    { schema: { summary: 'Pay one of my orders', params: IdParams, response: { 200: ResultOf(OrderViewSchema) } } },
    async (request) => ok(await userOrders.pay(currentUser(request).id, request.params.id)),
  );
};
