import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient, lockKey } from '../../../src/lib/lock/index.js';
import { killFixtures, runFixture } from '../../../kit/children.js';
import { connectRedis, deleteKeys, uniquePrefix } from '../../support/redis.js';

// Each test gets its own prefix: the fixtures use fixed key names inside it.
const rootPrefix = uniquePrefix('lock-processes');
let testNumber = 0;
const clients: Redis[] = [];

function redisFor(prefix: string): Redis {
  const redis = connectRedis(prefix);
  clients.push(redis);
  return redis;
}

afterAll(async () => {
  killFixtures();
  for (const redis of clients) redis.disconnect();
  await deleteKeys(rootPrefix);
});

describe('across OS processes', () => {
  for (const kind of ['reentrant', 'simple'] as const) {
    it(`${kind} lock: 4 processes doing a non-atomic read-modify-write lose no increment`, async () => {
      const prefix = `${rootPrefix}${++testNumber}:`;
      const iterations = 60;
      const workers = Array.from({ length: 4 }, () => runFixture(new URL('./fixtures/counter-worker.ts', import.meta.url), [prefix, kind, String(iterations)]));
      await Promise.all(workers.map((worker) => worker.exited));

      const redis = redisFor(prefix);
      expect(Number(await redis.get('counter'))).toBe(4 * iterations);
      expect(await redis.exists(lockKey('counter'))).toBe(0);
    });
  }

  describe('a holder killed with SIGKILL', () => {
    let locks: LockClient;
    let redis: Redis;
    const prefix = `${rootPrefix}kill:`;
    const leaseMs = 1_500;

    beforeAll(() => {
      redis = redisFor(prefix);
      locks = new LockClient(redis, { pollMs: 10_000 });
    });

    afterAll(() => locks.close());

    it('keeps the lock while alive (watchdog) and frees it within one lease after death', async () => {
      const holder = runFixture(new URL('./fixtures/hold-lock.ts', import.meta.url), [prefix, 'held', String(leaseMs)]);
      await holder.waitForLine(/^locked \d+$/);
      await sleep(2 * leaseMs); // twice the lease: only renewals keep it
      expect(await redis.exists(lockKey('held'))).toBe(1);
      expect(holder.output()).not.toContain('lost');

      const waiter = locks.lock('held').tryLock({ waitMs: 10_000, leaseMs: 5_000 });
      holder.child.kill('SIGKILL');
      const killedAt = Date.now();
      const handle = await waiter;
      const freedAfterMs = Date.now() - killedAt;

      expect(handle).not.toBeNull();
      expect(freedAfterMs).toBeLessThan(leaseMs + 1_000); // one lease, plus scheduling slack
      await handle!.release();
    });
  });
});
