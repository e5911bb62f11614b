import { describe, expect, it } from 'vitest';
import { ReserveBatcher } from '../../../../src/modules/seckill/sale/reserve-batcher.js';
import type { ReserveRequest } from '../../../../src/modules/seckill/sale/sale-scripts.js';
import type { ReserveResult } from '../../../../src/modules/seckill/types.js';

/** A decide function whose calls the test answers by hand. */
function handAnswered() {
  const calls: Array<{ batch: string[]; answer: (results: ReserveResult[]) => void; fail: (error: unknown) => void }> = [];
  const decide = (batch: ReserveRequest[]) =>
    new Promise<ReserveResult[]>((answer, fail) => calls.push({ batch: batch.map(({ order }) => order.orderId), answer, fail }));
  return { calls, decide };
}

const request = (orderId: string, voucherId = '10'): ReserveRequest => ({ order: { orderId, userId: orderId, voucherId }, mode: 'stream' });
const accepted = (slot: number): ReserveResult => ({ outcome: 'accepted', slot, acceptedMs: 1 });
/** Lets the batcher's continuation after an answer run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('ReserveBatcher', () => {
  it('sends an order at once when no call of its shard is out, with no wait for another', () => {
    const { calls, decide } = handAnswered();
    const batcher = new ReserveBatcher({ laneOf: ({ order }) => Number(order.voucherId) % 2, decide, maxBatch: 8 });
    void batcher.reserve(request('1'));
    expect(calls.map(({ batch }) => batch)).toEqual([['1']]);
    // Another shard's order does not wait for this one either.
    void batcher.reserve(request('2', '11'));
    expect(calls.map(({ batch }) => batch)).toEqual([['1'], ['2']]);
  });

  it('groups the orders that arrive while a call is out into the next call, each answered with its own result', async () => {
    const { calls, decide } = handAnswered();
    const sizes: number[] = [];
    const batcher = new ReserveBatcher({ laneOf: () => 0, decide, maxBatch: 2, onBatch: (size) => sizes.push(size) });
    const answers = ['1', '2', '3', '4'].map((id) => batcher.reserve(request(id)));
    expect(calls).toHaveLength(1);
    calls[0]!.answer([accepted(1)]);
    await settle();
    expect(calls.map(({ batch }) => batch)).toEqual([['1'], ['2', '3']]);
    calls[1]!.answer([accepted(2), { outcome: 'sold-out' }]);
    await settle();
    calls[2]!.answer([{ outcome: 'replayed', orderId: '2' }]);
    expect(await Promise.all(answers)).toEqual([accepted(1), accepted(2), { outcome: 'sold-out' }, { outcome: 'replayed', orderId: '2' }]);
    expect(sizes).toEqual([1, 2, 1]);
    // Idle again: the next order goes at once.
    void batcher.reserve(request('5'));
    expect(calls).toHaveLength(4);
  });

  it("fails every order of a call that fails with the call's error, and carries on with the next batch", async () => {
    const { calls, decide } = handAnswered();
    const batcher = new ReserveBatcher({ laneOf: () => 0, decide, maxBatch: 8 });
    const first = batcher.reserve(request('1'));
    const batch = ['2', '3'].map((id) => batcher.reserve(request(id)));
    calls[0]!.answer([accepted(1)]);
    await settle();
    const lost = new Error('Command timed out');
    calls[1]!.fail(lost);
    expect(await first).toEqual(accepted(1));
    for (const answer of batch) await expect(answer).rejects.toBe(lost);
    const next = batcher.reserve(request('4'));
    calls[2]!.answer([accepted(1)]);
    expect(await next).toEqual(accepted(1));
  });

  it('fails an order the reply has no result for instead of guessing', async () => {
    const { calls, decide } = handAnswered();
    const batcher = new ReserveBatcher({ laneOf: () => 0, decide, maxBatch: 8 });
    const first = batcher.reserve(request('1'));
    const batch = ['2', '3'].map((id) => batcher.reserve(request(id)));
    calls[0]!.answer([accepted(1)]);
    await first;
    await settle();
    calls[1]!.answer([accepted(1)]);
    expect(await batch[0]).toEqual(accepted(1));
    await expect(batch[1]).rejects.toThrow('reserve.lua answered 1 of 2 orders');
  });

  it('answers the orders of a batch whose call could not even be made, and keeps the shard going', async () => {
    const { calls, decide } = handAnswered();
    let batches = 0;
    const onBatch = () => {
      batches += 1;
      if (batches === 1) throw new Error('the metric failed');
    };
    const batcher = new ReserveBatcher({ laneOf: () => 0, decide, maxBatch: 8, onBatch });
    await expect(batcher.reserve(request('1'))).rejects.toThrow('the metric failed');
    const next = batcher.reserve(request('2'));
    expect(calls.map(({ batch }) => batch)).toEqual([['2']]);
    calls[0]!.answer([accepted(1)]);
    expect(await next).toEqual(accepted(1));
  });
});
