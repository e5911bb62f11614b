import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis, type RedisOptions } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { LockClient, type Lock, type LockHandle } from '../../../src/lib/lock/index.js';
import { startRedisServer, type RedisServer } from '../../../kit/redis-servers.js';
import { testRedisUrl } from '../../../kit/services.js';
import { deleteKeys, uniquePrefix } from '../../support/redis.js';
import { tcpRelay } from '../../support/stall.js';

// Release notifications reach every waiter of a LockClient, whenever its subscriber connection
// was (re)connecting: waiters wake at a release, not at pollMs (set far beyond the waits here).
const keyPrefix = uniquePrefix('lock-wakeups');
const redisClients: Redis[] = [];
const lockClients: LockClient[] = [];
const servers: RedisServer[] = [];
const relays: Relay[] = [];
const POLL_MS = 60_000;
/** A release wakes its waiter within this (a missed one would wait for pollMs, or the deadline). */
const PROMPT_MS = 2_000;

function redisClient(url = testRedisUrl(), options: RedisOptions = {}): Redis {
  const redis = new Redis(url, { keyPrefix, maxRetriesPerRequest: 3, ...options });
  redisClients.push(redis);
  return redis;
}

function lockClient(redis: Redis): LockClient {
  const locks = new LockClient(redis, { pollMs: POLL_MS });
  lockClients.push(locks);
  return locks;
}

afterEach(async () => {
  await Promise.all(lockClients.splice(0).map((locks) => locks.close()));
  for (const redis of redisClients.splice(0)) redis.disconnect();
  await Promise.all(servers.splice(0).map((server) => server.kill()));
  await Promise.all(relays.splice(0).map((relay) => relay.close()));
});

afterAll(() => deleteKeys(keyPrefix));

/** Waits up to `waitMs` for `lock` in a new async context; resolves with the handle and when it came. */
const waitFor = (locks: LockClient, lock: Lock, waitMs: number): Promise<{ handle: LockHandle | null; at: number }> =>
  locks.runInContext(async () => {
    const handle = await lock.tryLock({ waitMs, leaseMs: 10_000 });
    return { handle, at: performance.now() };
  });

describe('release notifications', () => {
  it('wake every waiter of many new LockClients, also waiters that joined while the subscriber was connecting', async () => {
    const holderLocks = lockClient(redisClient());
    const clients = await Promise.all(
      Array.from({ length: 40 }, async (_, index) => {
        const relay = await startRelay(new URL(testRedisUrl()));
        relays.push(relay);
        const redis = redisClient(relay.url);
        await redis.ping();
        // The client's subscriber connection, opened by its first waiter, gets every answer 200 ms
        // late: it spends 200 ms between its TCP connect and its ready check (it waits for the
        // handshake's answers first).
        relay.delayNewConnections(200);
        return { index, relay, locks: lockClient(redis) };
      }),
    );
    const nameOf = (client: number, waiter: number): string => `fresh-${client}-${waiter}`;
    const holds = await Promise.all(clients.flatMap(({ index }) => [0, 1].map((waiter) => holderLocks.lock(nameOf(index, waiter)).lock({ leaseMs: 30_000 }))));
    const waits = clients.flatMap(({ index, relay, locks }) => {
      const subscriberConnected = relay.nextConnection();
      const first = waitFor(locks, locks.lock(nameOf(index, 0)), 8_000);
      // The second waiter joins in that window.
      const second = subscriberConnected.then(() => sleep(100)).then(() => waitFor(locks, locks.lock(nameOf(index, 1)), 8_000));
      return [first, second];
    });
    // The waiters are waiting by now; one that is not yet simply gets its lock at its attempt.
    await sleep(1_500);
    const releasedAt = performance.now();
    await Promise.all(holds.map((hold) => hold.release()));
    const outcomes = await Promise.all(waits);
    const late = outcomes.flatMap(({ handle, at }, waiter) => (handle === null || at - releasedAt > PROMPT_MS ? [waiter] : []));
    expect(late, 'waiters not woken by the release').toEqual([]);
    await Promise.all(outcomes.flatMap(({ handle }) => (handle ? [handle.release()] : [])));
  });

  it('are restored after the subscriber connection drops, and a release missed meanwhile wakes the waiter', async () => {
    const connectionName = `lock-wakeups-${randomUUID()}`;
    const holderLocks = lockClient(redisClient());
    const admin = redisClient();
    const locks = lockClient(redisClient(testRedisUrl(), { connectionName })); // its subscriber is a duplicate: same name
    const subscriberIds = async (): Promise<string[]> => {
      const list = (await admin.client('LIST')) as string;
      return list
        .split('\n')
        .filter((line) => line.includes(` name=${connectionName} `) && / flags=\w*P/.test(line))
        .map((line) => /^id=(\d+)/.exec(line)![1]!);
    };

    const missed = await holderLocks.lock('missed').lock({ leaseMs: 30_000 });
    const waitingMissed = waitFor(locks, locks.lock('missed'), 8_000);
    await expect.poll(subscriberIds).toHaveLength(1);
    await sleep(100); // subscribed; the waiter sleeps now
    await admin.client('KILL', 'ID', (await subscriberIds())[0]!);
    // Released while the subscriber reconnects: nobody in that process hears the PUBLISH.
    const releasedAt = performance.now();
    await missed.release();
    const woken = await waitingMissed;
    expect(woken.handle).not.toBeNull();
    expect(woken.at - releasedAt).toBeLessThan(PROMPT_MS);
    await woken.handle!.release();

    // Back on the new connection: a release is heard again.
    const next = await holderLocks.lock('after-reconnect').lock({ leaseMs: 30_000 });
    const waitingNext = waitFor(locks, locks.lock('after-reconnect'), 8_000);
    await sleep(300);
    const nextReleasedAt = performance.now();
    await next.release();
    const wokenNext = await waitingNext;
    expect(wokenNext.handle).not.toBeNull();
    expect(wokenNext.at - nextReleasedAt).toBeLessThan(PROMPT_MS);
    await wokenNext.handle!.release();
  });

  it('never hold up a waiter longer than pollMs while the subscriber cannot connect', async () => {
    // A server of its own that refuses the subscriber connection (maxclients reached): the waiter
    // falls back to polling every pollMs instead of waiting for a subscription until its deadline.
    const server = await startRedisServer();
    servers.push(server);
    const admin = redisClient(server.url);
    const holderLocks = lockClient(redisClient(server.url));
    const redis = redisClient(server.url);
    await Promise.all([admin.ping(), redis.ping()]);
    const locks = new LockClient(redis, { pollMs: 300 });
    lockClients.push(locks);
    const hold = await holderLocks.lock('refused').lock({ leaseMs: 30_000 });
    const connected = ((await admin.client('LIST')) as string).trim().split('\n').length;
    await admin.config('SET', 'maxclients', String(connected));
    const waiting = waitFor(locks, locks.lock('refused'), 6_000);
    await sleep(300);
    const releasedAt = performance.now();
    await hold.release();
    const woken = await waiting;
    expect(woken.handle).not.toBeNull();
    expect(woken.at - releasedAt).toBeLessThan(PROMPT_MS);
    await woken.handle!.release();
  });

  it('drop a subscription that failed, so that the next waiter of that name subscribes again', async () => {
    // A server of its own, where the waiting client's user may not use pub/sub at first (ACL).
    const server = await startRedisServer();
    servers.push(server);
    const admin = redisClient(server.url);
    await admin.acl('SETUSER', 'waiter', 'on', 'nopass', '~*', '+@all', 'resetchannels');
    const holderLocks = lockClient(redisClient(server.url));
    const locks = lockClient(redisClient(server.url, { username: 'waiter' }));

    const hold = await holderLocks.lock('hot').lock({ leaseMs: 30_000 });
    const first = waitFor(locks, locks.lock('hot'), 6_000); // its SUBSCRIBE fails: NOPERM
    await sleep(300);
    await admin.acl('SETUSER', 'waiter', 'allchannels');
    const second = waitFor(locks, locks.lock('hot'), 6_000); // joins the same name, now allowed
    await sleep(300);

    const releasedAt = performance.now();
    await hold.release();
    // One of them is woken by the release; its release (now allowed to PUBLISH) wakes the other.
    const winner = await Promise.race([first, second]);
    expect(winner.handle).not.toBeNull();
    expect(winner.at - releasedAt).toBeLessThan(PROMPT_MS);
    await winner.handle!.release();
    const both = await Promise.all([first, second]);
    expect(both.every(({ handle, at }) => handle !== null && at - releasedAt < 2 * PROMPT_MS)).toBe(true);
    await Promise.all(both.flatMap(({ handle }) => (handle ? [handle.release()] : [])));
  });
});

interface Relay {
  url: string;
  /** Connections accepted from now on get every answer `ms` late (a Redis far away). */
  delayNewConnections(ms: number): void;
  /** Resolves when the relay accepts its next connection. */
  nextConnection(): Promise<void>;
  close(): Promise<void>;
}

/** A TCP relay to `target`. */
async function startRelay(target: URL): Promise<Relay> {
  let delayMs = 0;
  const connectionWaiters: Array<() => void> = [];
  const relay = await tcpRelay(Number(target.port), target.hostname, (client, upstream) => {
    for (const resolve of connectionWaiters.splice(0)) resolve();
    client.pipe(upstream);
    const lateMs = delayMs;
    if (lateMs === 0) upstream.pipe(client);
    else upstream.on('data', (chunk: Buffer) => setTimeout(() => client.write(chunk), lateMs));
  });
  return {
    url: `redis://127.0.0.1:${relay.port}${target.pathname}`,
    delayNewConnections: (ms) => {
      delayMs = ms;
    },
    nextConnection: () => new Promise((resolve) => connectionWaiters.push(resolve)),
    close: () => relay.close(),
  };
}
