import { describe, expect, it } from 'vitest';
import {
  decodeDueMessage,
  decodeOrderMessage,
  dueMessage,
  orderMessage,
  saleTopology,
  unpaidTopology,
} from '../../../../src/modules/seckill/broker/rabbit-topology.js';

const fields = ['orderId', '123', 'userId', '7', 'voucherId', '9', 'slot', '2', 'acceptedMs', '1700000000000'];

describe('the order messages of SECKILL_QUEUE=rabbitmq', () => {
  it('carry the stream entry, read back with the stream’s own rules', () => {
    const { envelope, body } = orderMessage(1, '1700000000000-0', fields, '123');
    expect(envelope).toMatchObject({ routingKey: 'seckill.orders', durable: true, mandatory: true, messageId: '123' });
    expect(decodeOrderMessage({ body: JSON.parse(JSON.stringify(body)) as unknown })).toEqual({
      id: '1700000000000-0',
      fields,
      order: { orderId: '123', userId: '7', voucherId: '9', slot: 2, acceptedMs: 1_700_000_000_000 },
    });
  });

  it.each([
    ['no body', null],
    ['text', 'order 123'],
    ['no entry id', { fields }],
    ['fields not strings', { entryId: '1-0', fields: ['orderId', 123] }],
    ['no valid order', { entryId: '1-0', fields: ['orderId', 'x', 'userId', '7', 'voucherId', '9'] }],
  ])('are refused when they hold %s', (_case, body) => {
    expect(decodeOrderMessage({ body })).toBeNull();
  });

  it('are dead-lettered after SECKILL_MAX_DELIVERIES deliveries (a quorum queue delivers x-delivery-limit + 1 times)', () => {
    const { orderQueue } = saleTopology({ maxDeliveries: 5, maxLength: 10 });
    expect(orderQueue.arguments).toMatchObject({ 'x-queue-type': 'quorum', 'x-delivery-limit': 4, 'x-max-length': 10, 'x-overflow': 'reject-publish' });
  });
});

describe('the payment deadlines of SECKILL_QUEUE=rabbitmq', () => {
  const order = { orderId: '123', userId: '7', voucherId: '9', slot: 2, acceptedMs: 1_000_000, dueMs: 1_005_000 };

  it('wait in the delay queue until the due time, then are dead-lettered, at least once, to the release queue', () => {
    const { envelope, body } = dueMessage(order, 1_001_000.5);
    expect(envelope).toMatchObject({ routingKey: 'seckill.unpaid.delay', expiration: '4000', durable: true, mandatory: true, messageId: '123' });
    expect(envelope.exchange).toBeUndefined();
    expect(decodeDueMessage({ body: JSON.parse(JSON.stringify(body)) as unknown })).toEqual({
      orderId: '123',
      userId: '7',
      voucherId: '9',
      slot: 2,
      dueMs: 1_005_000,
    });
    const { delayQueue, releaseQueue, queueBindings } = unpaidTopology();
    expect(delayQueue.arguments).toMatchObject({
      'x-queue-type': 'quorum',
      'x-dead-letter-exchange': 'seckill.unpaid.due',
      'x-dead-letter-strategy': 'at-least-once',
      'x-overflow': 'reject-publish',
    });
    expect(queueBindings).toEqual([{ queue: releaseQueue.queue, exchange: 'seckill.unpaid.due', routingKey: '' }]);
  });

  it.each([
    ['at its due time', 1_005_000],
    ['after it', 1_009_000],
  ])('skip the delay queue when published %s: straight to the release queue, no expiration', (_case, now) => {
    const { envelope } = dueMessage(order, now);
    expect(envelope).toMatchObject({ exchange: 'seckill.unpaid.due', routingKey: '' });
    expect(envelope.expiration).toBeUndefined();
  });

  it.each([
    ['no body', null],
    ['an order id that is no number', { ...order, orderId: 'x' }],
    ['no user', { ...order, userId: undefined }],
    ['slot 0', { ...order, slot: 0 }],
    ['no due time', { ...order, dueMs: 'soon' }],
  ])('are refused when they hold %s', (_case, body) => {
    expect(decodeDueMessage({ body })).toBeNull();
  });
});
