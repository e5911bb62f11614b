import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeRedis, createRedis, type RedisClient } from '../../../../src/infra/redis.js';
import { REFUSALS } from '../../../../src/modules/seckill/messages.js';
import { buildSale } from '../../../../src/modules/seckill/sale/sale.js';
import { SaleKeys } from '../../../../src/modules/seckill/keys.js';
import { startRedisCluster, type TestCluster } from '../../../../kit/redis-cluster.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, InboxSmsSender, type TestEnv } from '../../../support/test-env.js';
import { buy, expectSoldOutExactly, insertSeckillVoucher, mysqlOrders } from '../../../support/seckill.js';
import { eventually } from '../../../support/eventually.js';

/**
 * The same code on a real 3-master Redis Cluster: sessions, login codes, rate limits, ids,
 * vouchers, the seckill script, streams and the worker. A script touching keys of two slots
 * would fail here with CROSSSLOT.
 */
let cluster: TestCluster;
let env: TestEnv;
let clusterEnv: TestEnv;
let redis: RedisClient;
const apps: FastifyInstance[] = [];
const sms = new InboxSmsSender();

beforeAll(async () => {
  cluster = await startRedisCluster(3);
  env = await createTestEnv();
  const config = { ...env.config, redisClusterNodes: cluster.nodes, seckill: { ...env.config.seckill, workerEnabled: true, streamShards: 8 } };
  redis = createRedis(config);
  clusterEnv = { ...env, config, redis };
  for (const consumerName of ['a', 'b']) apps.push((await buildTestApp(clusterEnv, sms, { consumerName })).app);
}, 60_000);

afterAll(async () => {
  for (const app of apps) await app.close();
  if (redis) await closeRedis(redis);
  await env?.cleanup();
  await cluster?.stop();
});

describe('on Redis Cluster', () => {
  it('logs in with an SMS code on one instance and is known on the other', async () => {
    const phone = '13700000001';
    expect((await apps[0]!.inject({ method: 'POST', url: `/api/user/code?phone=${phone}` })).statusCode).toBe(200);
    expect((await apps[1]!.inject({ method: 'POST', url: `/api/user/code?phone=${phone}` })).statusCode).toBe(429);
    const login = await apps[0]!.inject({ method: 'POST', url: '/api/user/login', payload: { phone, code: sms.lastCodeFor(phone) } });
    const me = await apps[1]!.inject({ url: '/api/user/me', headers: { authorization: login.json().data as string } });
    expect(me.statusCode).toBe(200);
    expect(me.json().data.id).toMatch(/^\d+$/);
  });

  it('sells stock 50 to 300 concurrent buyers across two instances: 50 orders, none lost', async () => {
    const users = await createUsersWithSessions(clusterEnv, 300);
    const vouchers = [await insertSeckillVoucher(env, { stock: 50 }), await insertSeckillVoucher(env, { stock: 50 })];
    const sale = buildSale(redis, new SaleKeys(8));
    for (const voucherId of vouchers) {
      const responses = await Promise.all(users.map((user, i) => buy(apps[i % 2]!, user.token, voucherId)));
      const bodies = responses.map((response) => response.json());
      const accepted = bodies.filter((body) => body.success).map((body) => body.data as string);
      expect(bodies.filter((body) => !body.success).every((body) => body.errorMsg === REFUSALS.soldOut)).toBe(true);
      await eventually(async () => expect(await mysqlOrders(env, voucherId)).toHaveLength(50));
      await expectSoldOutExactly(env, voucherId, 50, accepted, async () => (await sale.reads.read(voucherId))?.stock);
    }
    // The two vouchers' keys live in different slots: the shards really spread.
    expect(sale.keys.shardOf(vouchers[0]!)).not.toBe(sale.keys.shardOf(vouchers[1]!));
  });
});
