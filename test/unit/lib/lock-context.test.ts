import { describe, expect, it } from 'vitest';
import { currentContextId, runInNewContext, runInSomeContext } from '../../../src/lib/lock/context.js';

const tick = (ms = 1): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('lock contexts (the owner of reentrant locks)', () => {
  it('keep one id across awaits and timers, and none outside', async () => {
    expect(currentContextId()).toBeUndefined();
    const ids = await runInNewContext(async () => {
      const first = currentContextId();
      await tick();
      const afterTimer = currentContextId();
      const nested = await runInSomeContext(async () => currentContextId());
      return { first, afterTimer, nested };
    });
    expect(ids.first).toMatch(/^[0-9a-f-]{36}$/);
    expect(ids.afterTimer).toBe(ids.first);
    expect(ids.nested).toBe(ids.first);
    expect(currentContextId()).toBeUndefined();
  });

  it('keep a running context when an overlapping one ends (the storage is switched off only when none runs)', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const long = runInNewContext(async () => {
      const before = currentContextId();
      await gate;
      await tick();
      return { before, after: currentContextId() };
    });
    const short = await runInNewContext(async () => currentContextId());
    release();
    const { before, after } = await long;
    expect(before).toBeDefined();
    expect(after).toBe(before);
    expect(short).not.toBe(before);
  });

  it('work again after every context has ended, and end a context whose function throws', async () => {
    expect(() =>
      runInNewContext(() => {
        throw new Error('boom');
      }),
    ).toThrow('boom');
    await expect(runInNewContext(async () => Promise.reject(new Error('async boom')))).rejects.toThrow('async boom');
    expect(currentContextId()).toBeUndefined();
    const again = await runInNewContext(async () => {
      await tick();
      return currentContextId();
    });
    expect(again).toBeDefined();
    expect(runInNewContext(() => currentContextId())).toBeDefined();
    expect(currentContextId()).toBeUndefined();
  });
});
