import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PositionStore } from '../../../src/lib/cdc/index.js';
import { connectRedis, deleteKeys, uniquePrefix } from '../../support/redis.js';

/** The change follower's position (src/lib/cdc): saves fenced by the lease's token, atomically on Redis. */
describe('PositionStore: fenced saves', () => {
  const prefix = uniquePrefix('cdc-position');
  const redis = connectRedis(prefix);
  let store: PositionStore;

  beforeAll(() => {
    store = new PositionStore(redis, 'cdc:test:position');
  });

  afterAll(async () => {
    redis.disconnect();
    await deleteKeys(prefix);
  });

  it('nothing saved: undefined', async () => {
    expect(await store.load()).toBeUndefined();
  });

  it('a save with a lower token than the last save is refused and leaves the position; an equal or higher one is taken', async () => {
    const leader = 1_700_000_000_000_002n;
    const former = 1_700_000_000_000_001n;
    expect(await store.save({ file: 'binlog.000002', position: 900 }, leader)).toBe(true);
    expect(await store.save({ file: 'binlog.000001', position: 400 }, former)).toBe(false);
    expect(await store.load()).toMatchObject({ file: 'binlog.000002', position: 900, token: leader });
    expect(await store.save({ file: 'binlog.000002', position: 1200 }, leader)).toBe(true);
    expect(await store.save({ file: 'binlog.000003', position: 4 }, leader + 1n)).toBe(true);
    expect(await store.load()).toMatchObject({ file: 'binlog.000003', position: 4, token: leader + 1n });
  });

  it('concurrent saves of two tokens: whatever the order of arrival, the higher token is the one kept', async () => {
    const low = 1_800_000_000_000_000n;
    const high = low + 1n;
    await Promise.all(Array.from({ length: 50 }, (_, i) => store.save({ file: 'binlog.000009', position: i }, i % 2 === 0 ? low : high)));
    expect((await store.load())!.token).toBe(high);
    expect((await store.load())!.position % 2).toBe(1);
  });
});
