import { describe, expect, it } from 'vitest';
import { decodeOrderMessage, orderMessage, saleTopology } from '../../../../src/modules/seckill/broker/rabbit-topology.js';

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
