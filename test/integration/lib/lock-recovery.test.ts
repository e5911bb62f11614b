import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient, LockLostError, LockTimeoutError, MultiLock, RedLock, lockKey } from '../../../src/lib/lock/index.js';
import { startRedisServer, stopRedisServers, type RedisServer } from '../../../kit/redis-servers.js';

// Issue 16: locks when Redis is down, slow or restarted. Throw-away servers on spare ports, so
// stopping, pausing and restarting them cannot disturb the shared test Redis.
let servers: RedisServer[] = [];
let clients: Redis[] = [];
let locks: LockClient[] = [];

const failFast = { enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => 100, lazyConnect: true };

beforeAll(async () => {
  servers = await Promise.all(Array.from({ length: 3 }, () => startRedisServer()));
  clients = servers.map((server) => new Redis(server.url, failFast));
  for (const client of clients) client.on('error', () => undefined); // stopped servers: expected
  await Promise.all(clients.map((client) => client.connect()));
  locks = clients.map((client) => new LockClient(client, { defaultLeaseMs: 900 }));
});

afterAll(async () => {
  await Promise.all(locks.map((client) => client.close()));
  for (const client of clients) client.disconnect();
  await stopRedisServers(servers);
});

const lockedOn = (name: string): Promise<number[]> => Promise.all(clients.map((client) => client.exists(lockKey(name))));

async function eventually(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return true;
    await sleep(50);
  }
  return check();
}

/** A throw-away server that the test may pause, with a lock client on it (ioredis defaults); all stopped after. */
async function onOwnServer(test: (server: RedisServer, client: LockClient, redis: Redis) => Promise<void>): Promise<void> {
  const server = await startRedisServer();
  const redis = new Redis(server.url);
  const client = new LockClient(redis);
  try {
    await redis.ping();
    await test(server, client, redis);
  } finally {
    server.resume();
    await client.close();
    redis.disconnect();
    await server.kill();
  }
}

describe('waitMs bounds the whole acquisition', () => {
  it('when Redis is down: null (tryLock) or LockTimeoutError (lock) at the deadline, not when ioredis gives up', async () => {
    const server = await startRedisServer();
    // ioredis defaults: commands queue offline and are retried 20 times (about 10 s) before failing.
    const redis = new Redis(server.url);
    redis.on('error', () => undefined);
    const client = new LockClient(redis);
    try {
      await redis.ping();
      await server.kill();
      let start = Date.now();
      expect(await client.lock('down').tryLock({ waitMs: 800 })).toBeNull();
      expect(Date.now() - start).toBeLessThan(1_500);
      start = Date.now();
      await expect(client.simpleLock('down').lock({ waitMs: 500 })).rejects.toBeInstanceOf(LockTimeoutError);
      expect(Date.now() - start).toBeLessThan(1_200);
    } finally {
      await client.close();
      redis.disconnect();
      await server.kill();
    }
  });

  it('when Redis hangs: gives up at the deadline and releases the acquisition that arrives late', () =>
    onOwnServer(async (server, client) => {
      const observer = new Redis(server.url);
      try {
        await observer.ping();
        server.pause();
        const start = Date.now();
        expect(await client.lock('slow').tryLock({ waitMs: 500, leaseMs: 60_000 })).toBeNull();
        expect(Date.now() - start).toBeLessThan(1_200);
        server.resume();
        expect(await eventually(async () => (await observer.exists(lockKey('slow'))) === 0, 3_000)).toBe(true);
        // And the name is free for the next caller.
        const handle = await client.lock('slow').tryLock({ waitMs: 1_000 });
        expect(handle).not.toBeNull();
        await handle!.release();
      } finally {
        observer.disconnect();
      }
    }));
});

describe('waitMs bounds the fair and read-write locks too', () => {
  it('when Redis hangs: null at the deadline for each kind, and the name is free once Redis answers again', () =>
    onOwnServer(async (server, client) => {
      server.pause();
      const tries = [
        () => client.fairLock('slow-fair').tryLock({ waitMs: 400, leaseMs: 60_000 }),
        () => client.readWriteLock('slow-rw').writeLock().tryLock({ waitMs: 400, leaseMs: 60_000 }),
        () => client.readWriteLock('slow-rw').readLock().tryLock({ waitMs: 400, leaseMs: 60_000 }),
      ];
      for (const attempt of tries) {
        const start = Date.now();
        expect(await attempt()).toBeNull();
        expect(Date.now() - start).toBeLessThan(1_100);
      }
      server.resume();
      // The acquisitions that arrived late were released: a fresh caller takes each at once.
      const fair = await client.fairLock('slow-fair').tryLock({ waitMs: 3_000 });
      const write = await client.readWriteLock('slow-rw').writeLock().tryLock({ waitMs: 3_000 });
      expect(fair).not.toBeNull();
      expect(write).not.toBeNull();
      await Promise.all([fair!.release(), write!.release()]);
    }));
});

describe('waitMs bounds a semaphore wait too', () => {
  it('when Redis hangs: false at the deadline, and the permit taken late is given back', () =>
    onOwnServer(async (server, client) => {
      const semaphore = client.semaphore('slow');
      const expirable = client.permitExpirableSemaphore('slow');
      await semaphore.trySetPermits(1);
      await expirable.trySetPermits(1);
      server.pause();
      const start = Date.now();
      expect(await semaphore.tryAcquire({ waitMs: 400 })).toBe(false);
      expect(await expirable.tryAcquire({ waitMs: 400 })).toBeNull();
      expect(Date.now() - start).toBeLessThan(1_500);
      server.resume();
      expect(await eventually(async () => (await semaphore.availablePermits()) === 1 && (await expirable.availablePermits()) === 1, 3_000)).toBe(true);
    }));
});

describe('a MultiLock or RedLock that lost its quorum', () => {
  it('MultiLock: one lock lost, the others are released at once and no longer renewed', async () => {
    const handle = await new MultiLock(locks.map((client) => client.lock('multi-lost'))).lock(); // watchdogs, lease 900 ms
    expect(await lockedOn('multi-lost')).toEqual([1, 1, 1]);
    await clients[1]!.del(lockKey('multi-lost'));
    await new Promise((resolve) => handle.signal.addEventListener('abort', resolve));
    expect(handle.signal.reason).toBeInstanceOf(LockLostError);
    expect(await eventually(async () => (await lockedOn('multi-lost')).every((n) => n === 0), 500)).toBe(true);
    await sleep(1_000); // longer than a lease: nothing renews or re-creates them
    expect(await lockedOn('multi-lost')).toEqual([0, 0, 0]);
    await handle.release();
  });

  it('RedLock: two of three lost, the remaining minority is released at once', async () => {
    const handle = await new RedLock(locks.map((client) => client.lock('red-lost'))).lock();
    await Promise.all([clients[0]!.del(lockKey('red-lost')), clients[1]!.del(lockKey('red-lost'))]);
    await new Promise((resolve) => handle.signal.addEventListener('abort', resolve));
    expect(await eventually(async () => (await clients[2]!.exists(lockKey('red-lost'))) === 0, 500)).toBe(true);
    await handle.release();
  });
});

describe('RedLock over a rolling restart', () => {
  it('takes the lock again on each server that comes back empty, so the hold survives restarting all of them', async () => {
    const handle = await new RedLock(locks.map((client) => client.lock('rolling'))).lock(); // watchdogs, lease 900 ms
    for (const [i, server] of servers.entries()) {
      await server.kill();
      servers[i] = await startRedisServer({ port: server.port }); // no persistence: back empty
      const retaken = await eventually(async () => (await clients[i]!.exists(lockKey('rolling')).catch(() => 0)) === 1, 5_000);
      expect(retaken, `lock taken again on server ${i}`).toBe(true);
      expect(handle.signal.aborted).toBe(false);
    }
    expect(await lockedOn('rolling')).toEqual([1, 1, 1]);
    expect(handle.handles).toHaveLength(3);
    // A competitor is still excluded.
    expect(await new RedLock(locks.map((client) => client.lock('rolling'))).tryLock()).toBeNull();
    expect(await handle.release()).toBe(true);
    expect(await lockedOn('rolling')).toEqual([0, 0, 0]);
  });
});
