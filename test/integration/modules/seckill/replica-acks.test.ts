import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../../src/infra/config.js';
import { closeRedis, createRedis, type RedisClient } from '../../../../src/infra/redis.js';
import { SaleKeys } from '../../../../src/modules/seckill/keys.js';
import { SaleStore } from '../../../../src/modules/seckill/sale/sale-store.js';
import { startRedisCluster, type TestCluster } from '../../../../kit/redis-cluster.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, metricsAuth, type TestEnv } from '../../../support/test-env.js';
import { buy, insertSeckillVoucher } from '../../../support/seckill.js';

/**
 * SECKILL_REPLICA_ACKS on a real Redis Cluster with one replica per master: an accepted order is
 * on the replica of its master when the client hears "accepted", and a replica that does not
 * answer makes the WAIT time out on exactly that master (a WAIT sent to any other node would
 * come back at once with 1).
 */
const SHARDS = 4;
const TIMEOUT_MS = 400;

let cluster: TestCluster;
let env: TestEnv;
let clusterEnv: TestEnv;
let redis: RedisClient;
let app: FastifyInstance;
const timeouts: Array<{ accepted: number; acknowledged: number }> = [];
let store: SaleStore;
const batchSizes: number[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3, replicas: 1 });
  env = await createTestEnv();
  const config = {
    ...env.config,
    redisClusterNodes: cluster.nodes.slice(0, 3),
    seckill: { ...env.config.seckill, streamShards: SHARDS, replicaAcks: 1, replicaTimeoutMs: TIMEOUT_MS },
  };
  redis = createRedis(config);
  clusterEnv = { ...env, config, redis };
  app = (await buildTestApp(clusterEnv)).app;
  store = new SaleStore(redis, new SaleKeys(SHARDS), {
    replicaAcks: { acks: 1, timeoutMs: TIMEOUT_MS, onTimeout: (accepted, acknowledged) => timeouts.push({ accepted, acknowledged }) },
    // Batches as the app makes them: one reserve.lua call and one WAIT per batch of a shard.
    maxBatch: 64,
    onBatch: (size) => batchSizes.push(size),
  });
}, 90_000);

afterAll(async () => {
  await store?.close();
  await app?.close();
  if (redis) await closeRedis(redis);
  await env?.cleanup();
  await cluster?.stop();
});

/** A sale on a voucher of the given shard (voucher id mod SHARDS), published to the cluster. */
async function voucherOnShard(shard: number, stock: number): Promise<string> {
  for (;;) {
    const voucherId = await insertSeckillVoucher(env, { stock });
    if (Number(voucherId) % SHARDS === shard) {
      const row = await env.db.selectFrom('tb_seckill_voucher').selectAll().where('voucher_id', '=', voucherId).executeTakeFirstOrThrow();
      await store.publish({ voucherId, stock, begin: row.begin_time, end: row.end_time });
      return voucherId;
    }
  }
}

async function slotOf(key: string): Promise<number> {
  const { stdout } = await promisify(execFile)('redis-cli', ['-p', cluster.nodes[0]!.split(':')[1]!, 'cluster', 'keyslot', key]);
  return Number(stdout.trim());
}

/** The master serving the shard's keys and its one replica. */
const shardNode = async (shard: number) => {
  const { master, replicas } = await cluster.shardOf(await slotOf(`${env.keyPrefix}${store.keys.shard(shard).queued}`));
  return { masterPort: master, replicaPort: replicas[0]! };
};

describe('SECKILL_REPLICA_ACKS (WAIT after the reserve script)', () => {
  it('answers accepted orders only once the replica of their master has them', async () => {
    const vouchers = [await voucherOnShard(0, 100), await voucherOnShard(1, 100), await voucherOnShard(2, 100)];
    const orders = Array.from({ length: 240 }, (_, i) => ({ orderId: String(1_000_000 + i), userId: String(5000 + i), voucherId: vouchers[i % 3]! }));
    batchSizes.length = 0;
    const outcomes = await Promise.all(orders.map((order) => store.reserve(order)));
    expect(outcomes.every(({ outcome }) => outcome === 'accepted')).toBe(true);
    expect(timeouts).toEqual([]);
    // Sent at once, so each shard's first order went alone and the rest waited for it: batches formed.
    expect(batchSizes.reduce((sum, size) => sum + size, 0)).toBe(240);
    expect(batchSizes.length).toBeLessThan(240);

    // Read each replica straight away: every answered order must already be there.
    for (const shard of [0, 1, 2]) {
      const { replicaPort } = await shardNode(shard);
      const replica = new Redis({ port: replicaPort, host: '127.0.0.1', keyPrefix: env.keyPrefix });
      try {
        await replica.call('READONLY');
        const queued = await replica.hkeys(store.keys.shard(shard).queued);
        const expected = orders.filter((order) => Number(order.voucherId) % SHARDS === shard).map((order) => order.orderId);
        expect(new Set(queued)).toEqual(new Set(expected));
      } finally {
        replica.disconnect();
      }
    }
  });

  it("a stalled replica makes only its own master's orders wait (and be counted), then they are answered", async () => {
    // Two shards on different masters.
    const stalledShard = 0;
    const masters = await Promise.all([0, 1, 2, 3].map(async (shard) => (await shardNode(shard)).masterPort));
    const healthyShard = masters.findIndex((port) => port !== masters[stalledShard]);
    expect(healthyShard).toBeGreaterThan(0);
    const stalled = await voucherOnShard(stalledShard, 10);
    const healthy = await voucherOnShard(healthyShard, 10);
    const replica = cluster.process((await shardNode(stalledShard)).replicaPort);
    const users = await createUsersWithSessions(clusterEnv, 2);
    replica.kill('SIGSTOP');
    try {
      timeouts.length = 0;
      const started = Date.now();
      expect(await store.reserve({ orderId: '2000001', userId: '7001', voucherId: stalled })).toMatchObject({ outcome: 'accepted', slot: 1 });
      expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
      expect(timeouts).toEqual([{ accepted: 1, acknowledged: 0 }]);

      // The healthy master's replica acknowledged: no WAIT timed out (what the code guarantees; a
      // wall-clock bound under TIMEOUT_MS on top of it measured the machine's load, not the WAIT).
      timeouts.length = 0;
      expect(await store.reserve({ orderId: '2000002', userId: '7002', voucherId: healthy })).toMatchObject({ outcome: 'accepted', slot: 1 });
      expect(timeouts).toEqual([]);

      // Through the app: the order is answered (success) and counted in the metric.
      const response = await buy(app, users[0]!.token, stalled);
      expect(response.json()).toMatchObject({ success: true });
      const metrics = (await app.inject({ url: '/metrics', headers: metricsAuth })).body;
      expect(metrics).toMatch(/^seckill_replica_ack_timeouts_total 1$/m);
      expect((await buy(app, users[1]!.token, healthy)).json()).toMatchObject({ success: true });
      expect((await app.inject({ url: '/metrics', headers: metricsAuth })).body).toMatch(/^seckill_replica_ack_timeouts_total 1$/m);
    } finally {
      replica.kill('SIGCONT');
    }
  });

  it('validates its settings', () => {
    expect(loadConfig({}).seckill).toMatchObject({ replicaAcks: 0, replicaTimeoutMs: 100 });
    expect(() => loadConfig({ SECKILL_REPLICA_ACKS: '-1' })).toThrow(ConfigError);
    expect(() => loadConfig({ SECKILL_REPLICA_ACKS: 'one' })).toThrow(/SECKILL_REPLICA_ACKS/);
    expect(() => loadConfig({ SECKILL_REPLICA_TIMEOUT_MS: '0' })).toThrow(/SECKILL_REPLICA_TIMEOUT_MS/);
  });
});
