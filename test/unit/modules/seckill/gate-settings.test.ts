import { describe, expect, it } from 'vitest';
import { GATE_SETTINGS_TTL_MS, GateSettingsCache, type GateSettings } from '../../../../src/modules/seckill/gate/gate-settings-cache.js';

const gated: GateSettings = { mode: 'token', captchaMaxNumber: 400, begin: 0, end: 1 };
const open: GateSettings = { mode: 'off', captchaMaxNumber: 400, begin: 0, end: 1 };

/** A cache over a fake MySQL whose answer and availability the test sets. */
function cacheOver() {
  const state = { now: 0, answer: gated as GateSettings | null, down: false, loads: 0 };
  const cache = new GateSettingsCache(
    async () => {
      state.loads += 1;
      if (state.down) throw new Error('MySQL is down');
      return state.answer;
    },
    () => state.now,
  );
  return { cache, state };
}

describe('GateSettingsCache (the order route asks it on every request)', () => {
  it('loads a sale once, answers from memory within the TTL, then refreshes in the background', async () => {
    const { cache, state } = cacheOver();
    expect(await Promise.all([cache.get('1'), cache.get('1')])).toEqual([gated, gated]);
    expect(state.loads).toBe(1);
    state.answer = open;
    state.now += GATE_SETTINGS_TTL_MS;
    expect(await cache.get('1')).toEqual(gated); // the known copy, while the refresh runs
    await Promise.resolve();
    expect(await cache.get('1')).toEqual(open);
    expect(state.loads).toBe(2);
  });

  it('keeps the last known settings while MySQL fails (a gated sale stays gated); a sale never read fails', async () => {
    const { cache, state } = cacheOver();
    await cache.get('1');
    state.down = true;
    state.now += 10 * GATE_SETTINGS_TTL_MS;
    expect(await cache.get('1')).toEqual(gated);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(await cache.get('1')).toEqual(gated);
    await expect(cache.get('2')).rejects.toThrow('MySQL is down');
    state.down = false;
    expect(await cache.get('2')).toEqual(gated);
  });

  it('forget(): the next request reads the sale again (a PATCH on this instance)', async () => {
    const { cache, state } = cacheOver();
    await cache.get('1');
    state.answer = open;
    cache.forget('1');
    expect(await cache.get('1')).toEqual(open);
  });
});

describe('GateSettingsCache.keepLoaded (every unfinished sale known before its first order)', () => {
  it('answers a sale it never asked for from the bulk load, with no query per sale, also once MySQL is down', async () => {
    let loads = 0;
    let bulkLoads = 0;
    let down = false;
    const cache = new GateSettingsCache(
      async () => {
        loads += 1;
        throw new Error('no query per sale expected');
      },
      Date.now,
      async () => {
        bulkLoads += 1;
        if (down) throw new Error('MySQL is down');
        return new Map([
          ['7', gated],
          ['8', open],
        ]);
      },
    );
    const errors: unknown[] = [];
    cache.keepLoaded((error) => errors.push(error));
    try {
      await expect.poll(() => bulkLoads).toBe(1);
      await Promise.resolve();
      down = true;
      expect(await cache.get('7')).toEqual(gated);
      expect(await cache.get('8')).toEqual(open);
      await expect.poll(() => bulkLoads, { timeout: 3 * GATE_SETTINGS_TTL_MS }).toBeGreaterThanOrEqual(3);
      expect(await cache.get('7')).toEqual(gated); // stale, and still the known settings: no refresh per sale
      expect(loads).toBe(0);
      expect(errors).toHaveLength(1); // one log line per outage
    } finally {
      cache.stop();
    }
  });
});
