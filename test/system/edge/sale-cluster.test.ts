import calculateSlot from 'cluster-key-slot';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../../src/infra/config.js';
import { closeRedis, createRedis, type RedisClient } from '../../../src/infra/redis.js';
import { homeBucket, SaleKeys } from '../../../src/modules/seckill/index.js';
import { startEdge, type Edge } from '../../../kit/edge.js';
import { startRedisCluster, type TestCluster } from '../../../kit/redis-cluster.js';
import { eventually } from '../../support/eventually.js';
import { HOUR } from '../../support/seckill.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, sessionOf, type TestEnv } from '../../support/test-env.js';

/**
 * The sale's refusals at the edge on a Redis Cluster (edge/sale.md): each worker watches every
 * master with a pair of connections of its own (tracking is per node), a bucketed sale's buckets
 * live on different masters, and a master's failover costs no refusal the app would not give: the
 * dead master's view is stale within the bound, the keys' new master is watched from its first key.
 */
let cluster: TestCluster;
let env: TestEnv;
let config: Config;
let redis: RedisClient;
let app: FastifyInstance;
let edge: Edge;
let admin: { authorization: string };
let users: Array<{ id: string; token: string }>;
let nextUser = 0;

const FRESH_MS = 50;
const B = 3;

beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3, replicas: 1, nodeTimeoutMs: 2_000 });
  env = await createTestEnv({ REQUEST_DEADLINE_MS: '3000', SECKILL_MAX_BUCKETS: '8' });
  await env.db.insertInto('tb_shop').values({ id: '1', name: 'shop', type_id: '1', address: 'road 1', x: 120.15, y: 30.33 }).execute();
  config = { ...env.config, redisClusterNodes: cluster.nodes };
  redis = createRedis(config);
  const onCluster = { ...env, config, redis };
  ({ app } = await buildTestApp(onCluster));
  const appUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  edge = await startEdge(config, { salePool: [appUrl.replace('http://', '')], workers: 2, reads: { saleFreshMs: FRESH_MS } });
  admin = await sessionOf(onCluster, '999001', 'admin');
  users = await createUsersWithSessions(onCluster, 40, 19_000_000_000);
}, 90_000);

afterAll(async () => {
  await edge?.stop();
  await app?.close();
  if (redis) await closeRedis(redis);
  await env?.cleanup();
  await cluster?.stop();
});

const user = () => users[nextUser++]!;

async function order(voucherId: string, token: string) {
  const response = await fetch(`${edge.url}/api/voucher-order/seckill/${voucherId}`, {
    method: 'POST',
    headers: { authorization: token, 'accept-language': 'en' },
    signal: AbortSignal.timeout(15_000),
  });
  return { byApp: response.headers.get('x-upstream') !== null, body: (await response.json()) as { success: boolean; errorMsg?: string } };
}

async function createSale(body: Record<string, unknown>): Promise<string> {
  const response = await app.inject({
    method: 'POST',
    url: '/api/voucher/seckill',
    headers: admin,
    payload: {
      shopId: '1',
      title: 'cluster sale',
      payValue: 100,
      actualValue: 200,
      beginTime: new Date(Date.now() - HOUR).toISOString(),
      endTime: new Date(Date.now() + HOUR).toISOString(),
      ...body,
    },
  });
  expect(response.statusCode, response.body).toBe(200);
  return response.json<{ data: string }>().data;
}

async function raise(voucherId: string, stock: number): Promise<void> {
  const response = await app.inject({ method: 'PATCH', url: `/api/voucher/seckill/${voucherId}`, headers: admin, payload: { stock } });
  expect(response.statusCode, response.body).toBe(200);
}

/** Orders of a buyer who never buys (each one refused) until the edge refuses one itself. */
async function refusedAtEdge(voucherId: string): Promise<void> {
  const probe = user().token;
  await eventually(async () => expect(await order(voucherId, probe)).toEqual({ byApp: false, body: { success: false, errorMsg: 'Sold out' } }), 30_000);
}

/** Once the bound has passed after a change the app answered, an order through the edge reaches the app and is accepted. */
async function acceptedAfterBound(voucherId: string): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, FRESH_MS + 20));
  expect(await order(voucherId, user().token)).toMatchObject({ byApp: true, body: { success: true } });
}

describe("the sale's refusals at the edge on a Redis Cluster", () => {
  it('refuses a bucketed sale whose buckets live on three masters only once every one is empty', async () => {
    const voucherId = await createSale({ stock: B, buckets: B });
    const keys = new SaleKeys(config.seckill.streamShards, true);
    const masters = await Promise.all(
      [0, 1, 2].map(async (index) => (await cluster.shardOf(calculateSlot(env.keyPrefix + keys.bucket(voucherId, { index, of: B }).voucher))).master),
    );
    expect(new Set(masters).size).toBe(B);
    for (let bucket = 0; bucket < B; bucket += 1) {
      const buyer = users.slice(nextUser).find((candidate) => homeBucket(candidate.id, B) === bucket)!;
      users.splice(users.indexOf(buyer), 1);
      expect((await order(voucherId, buyer.token)).body).toMatchObject({ success: true });
    }
    await refusedAtEdge(voucherId);
    await raise(voucherId, 2 * B);
    await acceptedAfterBound(voucherId);
  });

  it("survives its master's failover: no refusal the app would not give, and refusals again from the new master", async () => {
    const voucherId = await createSale({ stock: 1 });
    expect((await order(voucherId, user().token)).body).toMatchObject({ success: true });
    await refusedAtEdge(voucherId);

    const slot = calculateSlot(env.keyPrefix + new SaleKeys(config.seckill.streamShards, true).voucher(voucherId).voucher);
    const { master } = await cluster.shardOf(slot);
    cluster.process(master).kill('SIGKILL');
    await eventually(async () => expect((await cluster.shardOf(slot)).master).not.toBe(master), 30_000);
    await cluster.waitUntilHealthy(30_000);

    // A unit comes back on the promoted master: the edge, which watched the dead one, refuses nothing past the bound.
    await eventually(async () => {
      const response = await app.inject({ method: 'PATCH', url: `/api/voucher/seckill/${voucherId}`, headers: admin, payload: { stock: 2 } });
      expect(response.statusCode, response.body).toBe(200);
    });
    await acceptedAfterBound(voucherId);
    await refusedAtEdge(voucherId);
  });
});
