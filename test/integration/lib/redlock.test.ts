import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient, LockLostError, MultiLock, RedLock, lockKey } from '../../../src/lib/lock/index.js';
import { startRedisServer, stopRedisServers, type RedisServer } from '../../../kit/redis-servers.js';

// Five independent throw-away Redis servers on spare loopback ports: stopping them cannot
// disturb the shared test Redis.
let servers: RedisServer[] = [];
let clients: Redis[] = [];
let locks: LockClient[] = [];

beforeAll(async () => {
  servers = await Promise.all(Array.from({ length: 5 }, () => startRedisServer()));
  clients = servers.map(
    (server) =>
      new Redis(server.url, {
        // A down server must fail fast instead of queueing commands until it returns.
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        retryStrategy: () => 100,
        lazyConnect: true,
      }),
  );
  // Stopped servers make the clients emit connection errors: expected here, not worth logging.
  for (const client of clients) client.on('error', () => undefined);
  await Promise.all(clients.map((client) => client.connect()));
  locks = clients.map((client) => new LockClient(client, { defaultLeaseMs: 900 }));
});

afterAll(async () => {
  await Promise.all(locks.map((client) => client.close()));
  for (const client of clients) client.disconnect();
  await stopRedisServers(servers);
});

const lockedOn = (indexes: number[], name: string): Promise<number[]> => Promise.all(indexes.map((i) => clients[i]!.exists(lockKey(name))));

describe('MultiLock (all of N)', () => {
  const first3 = (name: string): MultiLock => new MultiLock(locks.slice(0, 3).map((client) => client.lock(name)));

  it('holds all locks and releases all', async () => {
    const handle = await first3('all').tryLock({ leaseMs: 5_000 });
    expect(handle).not.toBeNull();
    expect(handle!.handles).toHaveLength(3);
    expect(handle!.validityMs).toBeGreaterThan(0);
    expect(handle!.validityMs).toBeLessThanOrEqual(5_000);
    expect(await lockedOn([0, 1, 2], 'all')).toEqual([1, 1, 1]);
    expect(await handle!.release()).toBe(true);
    expect(await lockedOn([0, 1, 2], 'all')).toEqual([0, 0, 0]);
  });

  it('rolls back a partial acquisition, and gets all once the missing one is free', async () => {
    const blocker = await locks[2]!.lock('partial').tryLock({ leaseMs: 5_000 });
    expect(await first3('partial').tryLock({ leaseMs: 5_000 })).toBeNull();
    expect(await lockedOn([0, 1], 'partial')).toEqual([0, 0]); // rolled back

    setTimeout(() => void blocker!.release(), 300);
    const handle = await first3('partial').tryLock({ waitMs: 5_000, leaseMs: 5_000 });
    expect(handle).not.toBeNull();
    await handle!.release();
  });

  it('aborts its signal when any lock is lost', async () => {
    const handle = await first3('lost').lock(); // watchdogs, lease 900 ms
    await clients[1]!.del(lockKey('lost'));
    await new Promise((resolve) => handle.signal.addEventListener('abort', resolve));
    expect(handle.signal.reason).toBeInstanceOf(LockLostError);
    await handle.release();
  });
});

describe('RedLock (majority of 5 servers)', () => {
  const redLock = (name: string): RedLock => new RedLock(locks.map((client) => client.lock(name)));

  it('acquires with all servers up, with a validity time below the lease', async () => {
    const handle = await redLock('up').tryLock({ leaseMs: 5_000 });
    expect(handle!.handles).toHaveLength(5);
    expect(handle!.validityMs).toBeGreaterThan(4_000);
    expect(handle!.validityMs).toBeLessThan(5_000 - 50); // drift allowance 1% + 2 ms
    // Excludes a competitor while held.
    expect(await redLock('up').tryLock({ leaseMs: 5_000 })).toBeNull();
    await handle!.release();
    expect(await lockedOn([0, 1, 2, 3, 4], 'up')).toEqual([0, 0, 0, 0, 0]);
  });

  it('acquires with 2 of 5 servers stopped', async () => {
    await Promise.all([servers[3]!.kill(), servers[4]!.kill()]);
    const handle = await redLock('two-down').tryLock({ leaseMs: 5_000 });
    expect(handle).not.toBeNull();
    expect(handle!.handles).toHaveLength(3);
    expect(await lockedOn([0, 1, 2], 'two-down')).toEqual([1, 1, 1]);
    expect(await handle!.release()).toBe(true);
  });

  it('refuses with 3 of 5 servers stopped, rolling back, and releases late answers', async () => {
    servers[2]!.pause(); // hangs: connections stay open, nothing is answered
    const start = Date.now();
    expect(await redLock('three-down').tryLock({ leaseMs: 5_000, waitMs: 600 })).toBeNull();
    expect(Date.now() - start).toBeLessThan(3_000);
    expect(await lockedOn([0, 1], 'three-down')).toEqual([0, 0]);

    servers[2]!.resume(); // the queued acquisitions now succeed late, and are released at once
    let stillLocked = 1;
    for (let i = 0; i < 50 && stillLocked === 1; i++) {
      await sleep(50);
      stillLocked = await clients[2]!.exists(lockKey('three-down'));
    }
    expect(stillLocked).toBe(0);
  });
});
