import { describe, expect, it } from 'vitest';
import { SmartBatcher } from '../../../src/lib/smart-batch/index.js';

/** An item: its id and the lane it goes out in. */
interface Item {
  id: string;
  lane: number;
}

/** A decide function whose calls the test answers by hand. */
function handAnswered() {
  const calls: Array<{ batch: string[]; answer: (results: string[]) => void; fail: (error: unknown) => void }> = [];
  const decide = (batch: Item[]) => new Promise<string[]>((answer, fail) => calls.push({ batch: batch.map(({ id }) => id), answer, fail }));
  return { calls, decide };
}

const item = (id: string, lane = 0): Item => ({ id, lane });
const laneOf = ({ lane }: Item) => lane;
/** Lets the batcher's continuation after an answer run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('SmartBatcher', () => {
  it('sends an item at once when no call of its lane is out, with no wait for another', () => {
    const { calls, decide } = handAnswered();
    const batcher = new SmartBatcher({ laneOf, decide, maxBatch: 8 });
    void batcher.submit(item('1'));
    expect(calls.map(({ batch }) => batch)).toEqual([['1']]);
    // Another lane's item does not wait for this one either.
    void batcher.submit(item('2', 1));
    expect(calls.map(({ batch }) => batch)).toEqual([['1'], ['2']]);
  });

  it('groups the items that arrive while a call is out into the next call, each answered with its own result', async () => {
    const { calls, decide } = handAnswered();
    const sizes: number[] = [];
    const batcher = new SmartBatcher({ laneOf, decide, maxBatch: 2, onBatch: (size) => sizes.push(size) });
    const answers = ['1', '2', '3', '4'].map((id) => batcher.submit(item(id)));
    expect(calls).toHaveLength(1);
    calls[0]!.answer(['a1']);
    await settle();
    expect(calls.map(({ batch }) => batch)).toEqual([['1'], ['2', '3']]);
    calls[1]!.answer(['a2', 'a3']);
    await settle();
    calls[2]!.answer(['a4']);
    expect(await Promise.all(answers)).toEqual(['a1', 'a2', 'a3', 'a4']);
    expect(sizes).toEqual([1, 2, 1]);
    // Idle again: the next item goes at once.
    void batcher.submit(item('5'));
    expect(calls).toHaveLength(4);
  });

  it("fails every item of a call that fails with the call's error, and carries on with the next batch", async () => {
    const { calls, decide } = handAnswered();
    const batcher = new SmartBatcher({ laneOf, decide, maxBatch: 8 });
    const first = batcher.submit(item('1'));
    const batch = ['2', '3'].map((id) => batcher.submit(item(id)));
    calls[0]!.answer(['a1']);
    await settle();
    const lost = new Error('Command timed out');
    calls[1]!.fail(lost);
    expect(await first).toBe('a1');
    for (const answer of batch) await expect(answer).rejects.toBe(lost);
    const next = batcher.submit(item('4'));
    calls[2]!.answer(['a4']);
    expect(await next).toBe('a4');
  });

  it('fails an item the reply has no result for instead of guessing', async () => {
    const { calls, decide } = handAnswered();
    const batcher = new SmartBatcher({ laneOf, decide, maxBatch: 8 });
    const first = batcher.submit(item('1'));
    const batch = ['2', '3'].map((id) => batcher.submit(item(id)));
    calls[0]!.answer(['a1']);
    await first;
    await settle();
    calls[1]!.answer(['a2']);
    expect(await batch[0]).toBe('a2');
    await expect(batch[1]).rejects.toThrow('a batch of 2 was answered with 1 results');
  });

  it('answers the items of a batch whose call could not even be made, and keeps the lane going', async () => {
    const { calls, decide } = handAnswered();
    let batches = 0;
    const onBatch = () => {
      batches += 1;
      if (batches === 1) throw new Error('the metric failed');
    };
    const batcher = new SmartBatcher({ laneOf, decide, maxBatch: 8, onBatch });
    await expect(batcher.submit(item('1'))).rejects.toThrow('the metric failed');
    const next = batcher.submit(item('2'));
    expect(calls.map(({ batch }) => batch)).toEqual([['2']]);
    calls[0]!.answer(['a2']);
    expect(await next).toBe('a2');
  });

  it('refuses a cap below one item', () => {
    expect(() => new SmartBatcher({ laneOf, decide: handAnswered().decide, maxBatch: 0 })).toThrow(RangeError);
  });
});
