/**
 * The order worker's group commit: batches that arrive while a write is in flight go together in
 * the next write; a group that fails for its items' own reason is written again batch by batch,
 * a transient failure fails every batch of the group at once.
 */
import { describe, expect, it } from 'vitest';
import { GroupCommit } from '../../../../src/modules/seckill/writer/group-commit.js';

class Transient extends Error {}

/** A write function that records its calls and holds each until released (or fails it). */
function heldWrites() {
  const calls: Array<{ items: readonly string[]; release: () => void; fail: (error: unknown) => void }> = [];
  const write = (items: readonly string[]) =>
    new Promise<void>((resolve, reject) => {
      calls.push({ items, release: resolve, fail: reject });
    });
  return { calls, write };
}

const settled = (promise: Promise<void>) =>
  promise.then(
    () => 'written',
    (error: unknown) => error,
  );

describe('GroupCommit', () => {
  it('writes a batch at once when no write is in flight, and the batches that came meanwhile together next', async () => {
    const { calls, write } = heldWrites();
    const group = new GroupCommit(write, { maxItems: 100, isTransient: (error) => error instanceof Transient });
    const first = group.submit(['a1', 'a2']);
    expect(calls.map((call) => call.items)).toEqual([['a1', 'a2']]);
    const second = group.submit(['b1']);
    const third = group.submit(['c1', 'c2']);
    expect(group.waiting).toBe(2);
    expect(calls).toHaveLength(1);

    calls[0]!.release();
    await first;
    await expect.poll(() => calls.length).toBe(2);
    expect(calls[1]!.items).toEqual(['b1', 'c1', 'c2']);
    expect(group.waiting).toBe(0);
    calls[1]!.release();
    await Promise.all([second, third]);
  });

  it('never splits a batch and puts no more than maxItems in one write (a larger batch goes alone)', async () => {
    const { calls, write } = heldWrites();
    const group = new GroupCommit(write, { maxItems: 3, isTransient: () => false });
    const all = [group.submit(['a']), group.submit(['b1', 'b2']), group.submit(['c1', 'c2']), group.submit(['d1', 'd2', 'd3', 'd4'])];
    for (let i = 0; i < 4; i++) {
      await expect.poll(() => calls.length).toBe(i + 1);
      calls[i]!.release();
    }
    await Promise.all(all);
    expect(calls.map((call) => call.items)).toEqual([['a'], ['b1', 'b2'], ['c1', 'c2'], ['d1', 'd2', 'd3', 'd4']]);
  });

  it('writes a group that failed for its items again batch by batch, each batch getting its own outcome', async () => {
    const { calls, write } = heldWrites();
    const group = new GroupCommit(write, { maxItems: 100, isTransient: (error) => error instanceof Transient });
    const first = group.submit(['a']);
    const good = settled(group.submit(['b']));
    const bad = settled(group.submit(['c']));
    calls[0]!.release();
    await first;
    await expect.poll(() => calls.length).toBe(2);
    const notNew = new Error('c was written before');
    calls[1]!.fail(notNew);
    await expect.poll(() => calls.length).toBe(3);
    expect(calls[2]!.items).toEqual(['b']);
    calls[2]!.release();
    await expect.poll(() => calls.length).toBe(4);
    expect(calls[3]!.items).toEqual(['c']);
    calls[3]!.fail(notNew);
    expect([await good, await bad]).toEqual(['written', notNew]);
  });

  it('fails every batch of a group at once on a transient failure, and a lone batch with its own error', async () => {
    const { calls, write } = heldWrites();
    const group = new GroupCommit(write, { maxItems: 100, isTransient: (error) => error instanceof Transient });
    const lone = settled(group.submit(['a']));
    const second = settled(group.submit(['b']));
    const third = settled(group.submit(['c']));
    const refused = new Error('refused');
    calls[0]!.fail(refused);
    expect(await lone).toBe(refused);
    await expect.poll(() => calls.length).toBe(2);
    const down = new Transient('MySQL down');
    calls[1]!.fail(down);
    expect([await second, await third]).toEqual([down, down]);
    expect(calls).toHaveLength(2);

    // Idle again: the next batch goes out at once.
    const later = group.submit(['d']);
    expect(calls[2]!.items).toEqual(['d']);
    calls[2]!.release();
    await later;
  });
});
