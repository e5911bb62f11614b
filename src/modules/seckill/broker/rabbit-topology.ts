import type { AsyncMessage, Cmd, Envelope, MethodParams } from 'rabbitmq-client';
import { parseOrder } from '../writer/order-stream.js';
import type { DueOrder, OrderEntry } from '../types.js';

/**
 * The sale's RabbitMQ objects, declared by whoever uses them first (the relay's publisher and the
 * consumers declare the same ones, again after every reconnect):
 *
 *   seckill.orders        quorum queue of accepted orders, one message per stream entry;
 *                         x-delivery-limit, x-max-length with x-overflow reject-publish (a full
 *                         queue refuses publishes: the relay slows down, orders wait in the stream),
 *                         dead letters to seckill.orders.dlx, at least once
 *   seckill.orders.dlx    fanout exchange of the orders that failed too often
 *   seckill.orders.dead   quorum queue behind it, consumed by dead-letters.ts
 *
 * A queue's arguments are fixed when it is first declared: a later declaration with others fails
 * (PRECONDITION_FAILED, logged). Change them with a policy, or a new queue once the old is empty.
 */
export const ORDER_QUEUE = 'seckill.orders';
export const DEAD_LETTER_EXCHANGE = 'seckill.orders.dlx';
export const DEAD_LETTER_QUEUE = 'seckill.orders.dead';

export interface TopologySettings {
  /** Deliveries of a message before it is dead-lettered (SECKILL_MAX_DELIVERIES). */
  maxDeliveries: number;
  maxLength: number;
}

export type QueueDeclaration = MethodParams[Cmd.QueueDeclare] & { queue: string };

/** The declarations every publisher and consumer of the sale makes before its first use. */
export function saleTopology({ maxDeliveries, maxLength }: TopologySettings) {
  // A quorum queue delivers a message x-delivery-limit + 1 times before dead-lettering it.
  const orderQueue: QueueDeclaration = {
    queue: ORDER_QUEUE,
    durable: true,
    arguments: {
      'x-queue-type': 'quorum',
      'x-delivery-limit': maxDeliveries - 1,
      'x-max-length': maxLength,
      'x-overflow': 'reject-publish',
      'x-dead-letter-exchange': DEAD_LETTER_EXCHANGE,
      // Kept by the queue until the dead-letter queue confirmed it (needs reject-publish).
      'x-dead-letter-strategy': 'at-least-once',
    },
  };
  const deadLetterQueue: QueueDeclaration = { queue: DEAD_LETTER_QUEUE, durable: true, arguments: { 'x-queue-type': 'quorum' } };
  return {
    orderQueue,
    deadLetterQueue,
    exchanges: [{ exchange: DEAD_LETTER_EXCHANGE, type: 'fanout' as const, durable: true }],
    queues: [orderQueue, deadLetterQueue],
    queueBindings: [{ queue: DEAD_LETTER_QUEUE, exchange: DEAD_LETTER_EXCHANGE, routingKey: '' }],
  };
}

export type SaleTopology = ReturnType<typeof saleTopology>;

/** The message body: the stream entry as reserve.lua wrote it, so that the writer parses it with the stream's own rules. */
interface OrderMessage {
  shard: number;
  entryId: string;
  fields: string[];
}

/** A stream entry as a persistent message to the order queue; its message id is the order id (`mandatory`: an unroutable one is a failure). */
export function orderMessage(shard: number, entryId: string, fields: string[], orderId: string): { envelope: Envelope; body: OrderMessage } {
  return {
    envelope: { routingKey: ORDER_QUEUE, durable: true, mandatory: true, messageId: orderId, contentType: 'application/json' },
    body: { shard, entryId, fields },
  };
}

/**
 * The order a message carries, with its stream entry's id and fields, or null when the body is no
 * entry of a valid order. Its shard is the voucher's (the body's `shard` is for people reading the queue).
 */
export function decodeOrderMessage(message: Pick<AsyncMessage, 'body'>): (OrderEntry & { fields: string[] }) | null {
  const body = message.body as Partial<OrderMessage> | null;
  if (body === null || typeof body !== 'object') return null;
  const { entryId, fields } = body;
  if (typeof entryId !== 'string' || !Array.isArray(fields) || !fields.every((field) => typeof field === 'string')) return null;
  const order = parseOrder(entryId, fields);
  return order === null ? null : { id: entryId, order, fields };
}

/**
 * The payment deadlines of SECKILL_QUEUE=rabbitmq (unpaid-delays.ts, release-consumer.ts):
 *
 *   seckill.unpaid.delay     quorum queue without consumers: each written order waits here until its
 *                            payment window ends (per-message `expiration`), then is dead-lettered,
 *                            at least once (needs x-overflow reject-publish), to
 *   seckill.unpaid.due       fanout exchange of the orders now due (an order published after its due
 *                            time goes here at once), bound to
 *   seckill.unpaid.release   quorum queue consumed by every canceller: a conditional cancel per order
 */
export const DELAY_QUEUE = 'seckill.unpaid.delay';
export const DUE_EXCHANGE = 'seckill.unpaid.due';
export const RELEASE_QUEUE = 'seckill.unpaid.release';

/** The declarations of the delay publisher and the release queue's consumers. */
export function unpaidTopology() {
  const delayQueue: QueueDeclaration = {
    queue: DELAY_QUEUE,
    durable: true,
    arguments: {
      'x-queue-type': 'quorum',
      'x-dead-letter-exchange': DUE_EXCHANGE,
      // An expired order stays in the delay queue until the release queue confirmed it: a node lost in between loses no deadline.
      'x-dead-letter-strategy': 'at-least-once',
      'x-overflow': 'reject-publish',
    },
  };
  const releaseQueue: QueueDeclaration = { queue: RELEASE_QUEUE, durable: true, arguments: { 'x-queue-type': 'quorum' } };
  return {
    delayQueue,
    releaseQueue,
    exchanges: [{ exchange: DUE_EXCHANGE, type: 'fanout' as const, durable: true }],
    queues: [delayQueue, releaseQueue],
    queueBindings: [{ queue: RELEASE_QUEUE, exchange: DUE_EXCHANGE, routingKey: '' }],
  };
}

export type UnpaidTopology = ReturnType<typeof unpaidTopology>;

/** The body of a payment deadline: the order, its acceptance (Redis time, ms) and its due time (acceptance + window). */
type DueMessage = DueOrder & { acceptedMs: number };

/**
 * A written order's deadline as a persistent message: to the delay queue, expiring at its due time,
 * or, when that time has passed (an order written late, after an outage), to the due exchange at once.
 */
export function dueMessage(order: DueMessage, nowMs: number): { envelope: Envelope; body: DueMessage } {
  const waitMs = Math.ceil(order.dueMs - nowMs);
  const common = { durable: true, mandatory: true, messageId: order.orderId, contentType: 'application/json' };
  const envelope: Envelope =
    waitMs > 0 ? { ...common, routingKey: DELAY_QUEUE, expiration: String(waitMs) } : { ...common, exchange: DUE_EXCHANGE, routingKey: '' };
  return { envelope, body: order };
}

/** The due order a release message carries, or null when its body is none. */
export function decodeDueMessage(message: Pick<AsyncMessage, 'body'>): DueOrder | null {
  const body = message.body as Partial<DueMessage> | null;
  if (body === null || typeof body !== 'object') return null;
  const { orderId, userId, voucherId, slot, dueMs } = body;
  const ids = [orderId, userId, voucherId];
  if (!ids.every((id) => typeof id === 'string' && /^\d+$/.test(id))) return null;
  if (!Number.isInteger(slot) || (slot as number) < 1 || !Number.isFinite(dueMs)) return null;
  return { orderId: orderId!, userId: userId!, voucherId: voucherId!, slot: slot!, dueMs: dueMs! };
}
