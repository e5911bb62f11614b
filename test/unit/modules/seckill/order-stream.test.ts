import { describe, expect, it } from 'vitest';
import { orderFields, parseEntry, parseOrder } from '../../../../src/modules/seckill/writer/order-stream.js';

/** A stream entry id: the Redis time (ms) of its XADD, then a sequence number. */
const ENTRY_ID = '1700000000000-3';
const ENTRY_MS = 1_700_000_000_000;

describe("parseOrder: a stream entry's fields as an order", () => {
  it('reads the three ids whatever the field order, ignoring other fields', () => {
    const order = { orderId: '9223372036854775807', userId: '1', voucherId: '20', slot: 1, acceptedMs: ENTRY_MS };
    expect(parseOrder(ENTRY_ID, ['orderId', order.orderId, 'userId', '1', 'voucherId', '20'])).toEqual(order);
    expect(parseOrder(ENTRY_ID, ['voucherId', '20', 'traceId', 'abc', 'userId', '1', 'orderId', order.orderId])).toEqual(order);
  });

  it('takes the last value of a repeated field and ignores a trailing field without a value', () => {
    expect(parseOrder(ENTRY_ID, ['orderId', '1', 'userId', '2', 'voucherId', '3', 'orderId', '4', 'extra'])).toEqual({
      orderId: '4',
      userId: '2',
      voucherId: '3',
      slot: 1,
      acceptedMs: ENTRY_MS,
    });
  });

  it('reads the slot reserve.lua assigned (slot 1 for entries written before slots existed) and refuses a bad one', () => {
    expect(parseOrder(ENTRY_ID, ['orderId', '1', 'userId', '2', 'voucherId', '3', 'slot', '7'])).toEqual({
      orderId: '1',
      userId: '2',
      voucherId: '3',
      slot: 7,
      acceptedMs: ENTRY_MS,
    });
    for (const bad of ['0', '-1', 'x', '100', '']) expect(parseOrder(ENTRY_ID, ['orderId', '1', 'userId', '2', 'voucherId', '3', 'slot', bad])).toBeNull();
  });

  it("reads the acceptance time reserve.lua wrote; an entry without it (queued before the field existed) takes its entry id's time", () => {
    const fields = ['orderId', '1', 'userId', '2', 'voucherId', '3', 'slot', '1'];
    expect(parseOrder(ENTRY_ID, [...fields, 'acceptedMs', '1699999999123'])?.acceptedMs).toBe(1_699_999_999_123);
    expect(parseOrder(ENTRY_ID, fields)?.acceptedMs).toBe(ENTRY_MS);
    for (const bad of ['', 'x', '-1', '1.5']) expect(parseOrder(ENTRY_ID, [...fields, 'acceptedMs', bad])).toBeNull();
  });

  it('returns null for a missing field, so the worker can dead-letter the entry', () => {
    expect(parseOrder(ENTRY_ID, ['orderId', '1', 'userId', '2'])).toBeNull();
    expect(parseOrder(ENTRY_ID, [])).toBeNull();
  });

  it.each([['0'], ['01'], ['-1'], ['1.5'], [' 1'], ['1e3'], [''], ['abc'], ['123456789012345678901']])(
    'returns null for the id %j (not a positive decimal id of up to 20 digits)',
    (bad) => {
      expect(parseOrder(ENTRY_ID, ['orderId', bad, 'userId', '2', 'voucherId', '3'])).toBeNull();
      expect(parseOrder(ENTRY_ID, ['orderId', '1', 'userId', bad, 'voucherId', '3'])).toBeNull();
      expect(parseOrder(ENTRY_ID, ['orderId', '1', 'userId', '2', 'voucherId', bad])).toBeNull();
    },
  );
});

describe("parseEntry: a stream entry's orders", () => {
  it("reads reserve.lua's batch entry: every order at the batch's acceptance time", () => {
    const fields = ['acceptedMs', '1700000000123', 'orders', '11:1:20:1,12:2:20:2,13:3:21:1'];
    expect(parseEntry(ENTRY_ID, fields)).toEqual([
      { orderId: '11', userId: '1', voucherId: '20', slot: 1, acceptedMs: 1_700_000_000_123 },
      { orderId: '12', userId: '2', voucherId: '20', slot: 2, acceptedMs: 1_700_000_000_123 },
      { orderId: '13', userId: '3', voucherId: '21', slot: 1, acceptedMs: 1_700_000_000_123 },
    ]);
  });

  it('reads a one-order entry (hand-off.lua, dead letters, broker messages) as one order, and orderFields writes it back', () => {
    const order = { orderId: '11', userId: '1', voucherId: '20', slot: 3, acceptedMs: 1_700_000_000_123 };
    expect(parseEntry(ENTRY_ID, orderFields(order))).toEqual([order]);
  });

  it('refuses a batch entry with any malformed order, or without a valid time', () => {
    for (const bad of ['', '11:1:20', '11:1:20:1:9', 'x:1:20:1', '11:1:20:0', '11:1:20:1,', '11:1:20:1,12:0:20:1']) {
      expect(parseEntry(ENTRY_ID, ['acceptedMs', '1700000000123', 'orders', bad])).toBeNull();
    }
    expect(parseEntry(ENTRY_ID, ['acceptedMs', 'x', 'orders', '11:1:20:1'])).toBeNull();
    expect(parseEntry(ENTRY_ID, ['orders', '11:1:20:1'])).toEqual([{ orderId: '11', userId: '1', voucherId: '20', slot: 1, acceptedMs: ENTRY_MS }]);
  });
});
