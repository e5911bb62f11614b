import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdGenerator } from '../../../src/lib/id/index.js';
import { LockClient, fenceKey, lockKey } from '../../../src/lib/lock/index.js';
import { AdmissionLimiter, RateLimiter } from '../../../src/lib/rate-limit/index.js';
import { startRedisCluster, type TestCluster } from '../../../kit/redis-cluster.js';
import { expectWaiterWokenByRelease } from './wake.js';

// A throw-away 3-node Redis Cluster: proves that every script only touches keys of one slot and
// that release notifications reach waiters through a Cluster subscriber. With a key prefix, as
// the app runs it.
const keyPrefix = 'test:cluster:';
let redisCluster: TestCluster;
let cluster: Cluster;

beforeAll(async () => {
  redisCluster = await startRedisCluster(3);
  cluster = new Cluster(
    redisCluster.nodes.map((node) => ({ host: '127.0.0.1', port: Number(node.split(':')[1]) })),
    { keyPrefix, redisOptions: { maxRetriesPerRequest: 3 } },
  );
  await cluster.ping();
});

afterAll(async () => {
  cluster?.disconnect();
  await redisCluster?.stop();
});

describe('on a Redis Cluster', () => {
  it('rate-limits with rules whose keys live in different slots, and leases admission tokens', async () => {
    const limiter = new RateLimiter(cluster);
    const perUser = { name: 'cl:user', limit: 2, windowSeconds: 60 };
    const perIp = { name: 'cl:ip', limit: 3, windowSeconds: 60 };
    const check = (user: string) =>
      limiter.consume([
        { rule: perUser, subject: user },
        { rule: perIp, subject: '10.0.0.1' },
      ]);
    expect(await check('u1')).toEqual({ allowed: true });
    expect(await check('u1')).toEqual({ allowed: true });
    expect(await check('u1')).toMatchObject({ allowed: false, rule: 'cl:user' });
    // Separate calls per slot: the refusal by the user rule still charged the IP rule (documented),
    // which is now at its limit of 3.
    expect(await cluster.get('rl:cl:ip:10.0.0.1')).toBe('3');
    expect(await check('u2')).toMatchObject({ allowed: false, rule: 'cl:ip' });
    expect(await cluster.get('rl:cl:user:u1')).toBe('2');

    const gate = new AdmissionLimiter(cluster, { name: 'cl:sale', ratePerSecond: 1000, blockSize: 10 });
    const decisions = await Promise.all(Array.from({ length: 25 }, () => gate.admit('v1')));
    expect(decisions.filter((decision) => decision.admitted).length).toBeGreaterThan(0);
    expect(Number(await cluster.hget('rl:cl:sale:v1', 'n'))).toBeGreaterThanOrEqual(10);
  });

  it('rate-limits the events of one slot in one script call and those of different slots apart', async () => {
    const batches: number[] = [];
    const limiter = new RateLimiter(cluster, { onBatch: (size) => batches.push(size) });
    const rule = { name: 'cl:batch', limit: 1, windowSeconds: 60 };
    // Subjects with one hash tag: their counters share a slot, so they may share a call.
    const sameSlot = await Promise.all(['{t}1', '{t}2', '{t}1', '{t}3'].map((subject) => limiter.consume([{ rule, subject }])));
    expect(sameSlot.map(({ allowed }) => allowed)).toEqual([true, true, false, true]);
    expect(batches).toEqual([1, 3]);
    expect(await cluster.get('rl:cl:batch:{t}1')).toBe('1');
    // Counters in different slots: a call per slot, each at once.
    batches.length = 0;
    const apart = await Promise.all(['{a}x', '{b}x', '{c}x'].map((subject) => limiter.consume([{ rule, subject }])));
    expect(apart.every(({ allowed }) => allowed)).toBe(true);
    expect(batches).toEqual([1, 1, 1]);
  });

  it('issues distinct IDs for prefixes whose counters live on different nodes', async () => {
    const ids = new IdGenerator(cluster);
    for (const prefix of ['order', 'blog', 'p0', 'p1', 'p2']) {
      const issued = await Promise.all(Array.from({ length: 200 }, () => ids.nextId(prefix)));
      expect(new Set(issued).size).toBe(200);
    }
  });

  it('locks, re-enters and fences, with lock and fence keys in one slot', async () => {
    const locks = new LockClient(cluster);
    try {
      for (const name of ['shop:1', 'order:42', 'voucher:7']) {
        await locks.withLock(name, async (outer) => {
          await locks.withLock(name, (inner) => expect(inner.fencingToken).toBe(outer.fencingToken));
          expect(await cluster.hvals(lockKey(name))).toEqual(['1']);
        });
        expect(await cluster.exists(lockKey(name))).toBe(0);
        expect(await cluster.exists(fenceKey(name))).toBe(1);
      }
    } finally {
      await locks.close();
      for (const name of ['shop:1', 'order:42', 'voucher:7']) await cluster.del(fenceKey(name));
    }
  });

  it('wakes a waiter through pub/sub well before the poll interval', async () => {
    const holderLocks = new LockClient(cluster);
    const waiterLocks = new LockClient(cluster, { pollMs: 10_000 });
    try {
      await expectWaiterWokenByRelease(holderLocks.simpleLock('wake'), waiterLocks.simpleLock('wake'));
    } finally {
      await Promise.all([holderLocks.close(), waiterLocks.close()]);
    }
  });
});
