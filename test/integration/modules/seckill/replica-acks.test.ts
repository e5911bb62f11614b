import { execFile } from 'node:child_process';
import calculateSlot from 'cluster-key-slot';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../../src/infra/config.js';
import { closeRedis, createRedis, type RedisClient } from '../../../../src/infra/redis.js';
import { SaleKeys, type BucketRef } from '../../../../src/modules/seckill/keys.js';
import type { TransferStepName } from '../../../../src/modules/seckill/sale/acknowledged-reserve.js';
import { buildSale, type Sale } from '../../../../src/modules/seckill/sale/sale.js';
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
let sale: Sale;
const batchSizes: number[] = [];
/** A sale of a deployment with buckets on, and the refill steps it counted as unconfirmed. */
let bucketSale: Sale;
const stepTimeouts: Array<{ step: TransferStepName; acknowledged: number }> = [];

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
  sale = buildSale(redis, new SaleKeys(SHARDS), {
    replicaAcks: { acks: 1, timeoutMs: TIMEOUT_MS, onTimeout: (accepted, acknowledged) => timeouts.push({ accepted, acknowledged }) },
    // Batches as the app makes them: one reserve.lua call and one WAIT per batch of a shard.
    maxBatch: 64,
    onBatch: (size) => batchSizes.push(size),
  });
  bucketSale = buildSale(redis, new SaleKeys(SHARDS, true), {
    replicaAcks: { acks: 1, timeoutMs: TIMEOUT_MS, onStepTimeout: (step, acknowledged) => stepTimeouts.push({ step, acknowledged }) },
  });
}, 90_000);

afterAll(async () => {
  await sale?.close();
  await bucketSale?.close();
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
      await sale.publisher.publish({ voucherId, stock, begin: row.begin_time, end: row.end_time });
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
  const { master, replicas } = await cluster.shardOf(await slotOf(`${env.keyPrefix}${sale.keys.shard(shard).queued}`));
  return { masterPort: master, replicaPort: replicas[0]! };
};

describe('SECKILL_REPLICA_ACKS (WAIT after the reserve script)', () => {
  it('answers accepted orders only once the replica of their master has them', async () => {
    const vouchers = [await voucherOnShard(0, 100), await voucherOnShard(1, 100), await voucherOnShard(2, 100)];
    const orders = Array.from({ length: 240 }, (_, i) => ({ orderId: String(1_000_000 + i), userId: String(5000 + i), voucherId: vouchers[i % 3]! }));
    batchSizes.length = 0;
    const outcomes = await Promise.all(orders.map((order) => sale.batches.reserve(order)));
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
        const queued = await replica.hkeys(sale.keys.shard(shard).queued);
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
      expect(await sale.batches.reserve({ orderId: '2000001', userId: '7001', voucherId: stalled })).toMatchObject({ outcome: 'accepted', slot: 1 });
      expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
      expect(timeouts).toEqual([{ accepted: 1, acknowledged: 0 }]);

      // The healthy master's replica acknowledged: no WAIT timed out (what the code guarantees; a
      // wall-clock bound under TIMEOUT_MS on top of it measured the machine's load, not the WAIT).
      timeouts.length = 0;
      expect(await sale.batches.reserve({ orderId: '2000002', userId: '7002', voucherId: healthy })).toMatchObject({ outcome: 'accepted', slot: 1 });
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

describe('SECKILL_REPLICA_ACKS on the refill steps of a bucketed sale (take, give, settle)', () => {
  const donor: BucketRef = { index: 0, of: 2 };
  const recipient: BucketRef = { index: 1, of: 2 };
  let nextVoucher = 880_000;

  /** A sale of 10 units over 2 buckets (5 each), published to the cluster; its two buckets live on two masters. */
  async function bucketedSale(): Promise<string> {
    const voucherId = String(nextVoucher++);
    await bucketSale.publisher.publish({ voucherId, stock: 10, begin: new Date(Date.now() - 60_000), end: new Date(Date.now() + 3_600_000), buckets: 2 });
    return voucherId;
  }

  /** The master holding a bucket's keys and its one replica. */
  const bucketNode = async (voucherId: string, bucket: BucketRef) => {
    const { master, replicas } = await cluster.shardOf(calculateSlot(`${env.keyPrefix}${bucketSale.keys.bucket(voucherId, bucket).voucher}`));
    return { master, replica: replicas[0]! };
  };

  /** What a replica holds of a bucket: stock, pending, and the transfer's marker and record in the bucket's lane. */
  async function onReplica(port: number, voucherId: string, bucket: BucketRef, transferId: string) {
    const replica = new Redis({ port, host: '127.0.0.1', keyPrefix: env.keyPrefix });
    try {
      await replica.call('READONLY');
      const [stock, pending] = await replica.hmget(bucketSale.keys.bucket(voucherId, bucket).voucher, 'stock', 'pending');
      const marker = await replica.get(bucketSale.keys.transferMarker(bucket, transferId));
      const record = await replica.hget(bucketSale.keys.transfers(bucketSale.keys.laneShard(bucket)), transferId);
      return { stock, pending, marker, record };
    } finally {
      replica.disconnect();
    }
  }

  it("has each step on its bucket's replica before the next step runs", async () => {
    const voucherId = await bucketedSale();
    const [from, to] = [await bucketNode(voucherId, donor), await bucketNode(voucherId, recipient)];
    expect(from.master).not.toBe(to.master);
    stepTimeouts.length = 0;
    const transferId = 'acked-refill';
    const steps = bucketSale.transfers['scripts'];
    expect(await steps.take({ voucherId, bucket: donor, transferId, to: recipient.index, most: 64 })).toEqual({ value: 3, durable: true });
    // Read the replica straight away: the take is there (stock moved to pending, the record kept).
    expect(await onReplica(from.replica, voucherId, donor, transferId)).toMatchObject({
      stock: '2',
      pending: '3',
      record: expect.stringMatching(/^\d+:0:2:1:3:/),
    });
    expect(await steps.transferIn({ voucherId, bucket: recipient, transferId, mode: 'give', units: 3 })).toEqual({ value: true, durable: true });
    expect(await onReplica(to.replica, voucherId, recipient, transferId)).toMatchObject({ stock: '8', marker: 'given' });
    expect(await steps.transferEnd({ voucherId, bucket: donor, transferId, mode: 'settle' })).toEqual({ value: 3, durable: true });
    expect(await onReplica(from.replica, voucherId, donor, transferId)).toMatchObject({ stock: '2', pending: '0', record: null });
    expect(stepTimeouts).toEqual([]);
  });

  it("a stalled replica of the recipient's master: the give waits, is counted and stands, and the donor settles only once the sweep finds it durable", async () => {
    const voucherId = await bucketedSale();
    const { replica } = await bucketNode(voucherId, recipient);
    const stalled = cluster.process(replica);
    stalled.kill('SIGSTOP');
    try {
      stepTimeouts.length = 0;
      const started = Date.now();
      expect(await bucketSale.transfers.move(voucherId, donor, recipient)).toBe(3);
      expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
      // Only the step on the stalled replica's master fell short: the take (the donor's master) was confirmed.
      expect(stepTimeouts).toEqual([{ step: 'transferIn', acknowledged: 0 }]);
      // The give stands (the recipient sells the units), but the donor keeps them pending, its transfer recorded:
      // a failover of the recipient's master to its stale replica would lose the give, and the sweep then returns them.
      expect((await redis.hmget(bucketSale.keys.bucket(voucherId, recipient).voucher, 'stock')).map(Number)).toEqual([8]);
      expect(await redis.hmget(bucketSale.keys.bucket(voucherId, donor).voucher, 'stock', 'pending')).toEqual(['2', '3']);
      // While the replica still lags, the sweep cannot end it durably either.
      stepTimeouts.length = 0;
      expect(await bucketSale.transfers.sweep(0)).toBe(0);
      expect(stepTimeouts).toEqual([{ step: 'transferIn', acknowledged: 0 }]);
    } finally {
      stalled.kill('SIGCONT');
    }
    // The replica caught up: the sweep finds the give durable and settles.
    expect(await bucketSale.transfers.sweep(0)).toBe(1);
    expect((await redis.hmget(bucketSale.keys.bucket(voucherId, recipient).voucher, 'stock')).map(Number)).toEqual([8]);
    expect(await redis.hmget(bucketSale.keys.bucket(voucherId, donor).voucher, 'stock', 'pending')).toEqual(['2', '0']);
  });
});
