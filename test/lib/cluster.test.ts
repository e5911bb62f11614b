import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdGenerator } from '../../src/lib/id/index.js';
import { LockClient, fenceKey, lockKey } from '../../src/lib/lock/index.js';
import { startRedisServer, stopRedisServers, type RedisServer } from './helpers/redis-servers.js';

// A throw-away 3-node Redis Cluster: proves that every script only touches keys of one slot and
// that release notifications reach waiters through a Cluster subscriber. With a key prefix, as
// the app runs it.
const SLOTS = 16_384;
const keyPrefix = 'test:cluster:';
let directory: string;
let servers: RedisServer[] = [];
let cluster: Cluster;

async function formCluster(nodes: Redis[]): Promise<void> {
  await Promise.all(
    nodes.map((node, i) => {
      const first = Math.floor((SLOTS * i) / nodes.length);
      const last = Math.floor((SLOTS * (i + 1)) / nodes.length) - 1;
      return node.call('CLUSTER', 'ADDSLOTSRANGE', first, last);
    }),
  );
  for (const server of servers.slice(1)) await nodes[0]!.call('CLUSTER', 'MEET', '127.0.0.1', server.port);
  const deadline = Date.now() + 20_000;
  for (;;) {
    const infos = await Promise.all(nodes.map((node) => node.call('CLUSTER', 'INFO') as Promise<string>));
    if (infos.every((info) => info.includes('cluster_state:ok') && info.includes(`cluster_known_nodes:${nodes.length}`))) return;
    if (Date.now() > deadline) throw new Error(`cluster did not form: ${infos.join('\n')}`);
    await sleep(100);
  }
}

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'hmdp-cluster-test-'));
  servers = await Promise.all(
    Array.from({ length: 3 }, () =>
      startRedisServer((port) => [
        '--cluster-enabled', 'yes',
        '--cluster-config-file', join(directory, `nodes-${port}.conf`),
        '--dir', directory,
      ]),
    ),
  );
  const nodes = servers.map((server) => new Redis(server.port, '127.0.0.1'));
  try {
    await formCluster(nodes);
  } finally {
    for (const node of nodes) node.disconnect();
  }
  cluster = new Cluster(
    servers.map((server) => ({ host: '127.0.0.1', port: server.port })),
    { keyPrefix, redisOptions: { maxRetriesPerRequest: 3 } },
  );
  await cluster.ping();
});

afterAll(async () => {
  cluster?.disconnect();
  await stopRedisServers(servers);
  if (directory) rmSync(directory, { recursive: true, force: true });
});

describe('on a Redis Cluster', () => {
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
      const holder = await holderLocks.simpleLock('wake').lock({ leaseMs: 20_000 });
      const waiting = waiterLocks.simpleLock('wake').tryLock({ waitMs: 8_000, leaseMs: 5_000 });
      await sleep(300);
      const releasedAt = Date.now();
      await holder.release();
      const handle = await waiting;
      expect(handle).not.toBeNull();
      expect(Date.now() - releasedAt).toBeLessThan(1_000);
      await handle!.release();
    } finally {
      await Promise.all([holderLocks.close(), waiterLocks.close()]);
    }
  });
});
