import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../../src/infra/config.js';
import { OrderStream } from '../../../src/modules/seckill/writer/order-stream.js';
import { ORDER_GROUP, SaleKeys } from '../../../src/modules/seckill/keys.js';
import { testRedisUrl } from '../../../kit/services.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, metricsAuth, type TestEnv } from '../../support/test-env.js';
import { buy, insertSeckillVoucher } from '../../support/seckill.js';

/** The series issue #10 adds to GET /metrics, with sane values after some traffic. */
let env: TestEnv;
let users: Array<{ id: string; token: string }>;
const apps: FastifyInstance[] = [];

beforeAll(async () => {
  env = await createTestEnv();
  users = await createUsersWithSessions(env, 10, 15_400_000_000);
});

afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()));
  await env?.cleanup();
});

async function appWith(seckill: Partial<Config['seckill']>): Promise<FastifyInstance> {
  const { app } = await buildTestApp({ ...env, config: { ...env.config, seckill: { ...env.config.seckill, ...seckill } } });
  apps.push(app);
  return app;
}

/** One sample of a scrape, e.g. value(text, 'seckill_consumer_lag', 'shard="1"'); undefined when absent. */
function value(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.split(' ').pop());
}

const scrape = async (app: FastifyInstance) => (await app.inject({ url: '/metrics', headers: metricsAuth })).body;

describe('GET /metrics', () => {
  it('shows consumer lag, pending entries, dead letters and accepted orders per shard of the order streams', async () => {
    const app = await appWith({ strategy: 'async' });
    const store = new OrderStream(env.redis, new SaleKeys(env.config.seckill.streamShards));
    const voucherId = await insertSeckillVoucher(env, { stock: 10 });
    const shard = store.keys.shardOf(voucherId);
    const { stream, deadLetters } = store.keys.shard(shard);
    for (const user of users.slice(0, 3)) expect((await buy(app, user.token, voucherId)).json()).toMatchObject({ success: true });

    // No worker runs here: without the group every entry still waits for delivery.
    let text = await scrape(app);
    expect(value(text, 'seckill_consumer_lag', `shard="${shard}"`)).toBe(3);
    expect(value(text, 'seckill_stream_length', `shard="${shard}"`)).toBe(3);
    expect(value(text, 'seckill_orders_queued', `shard="${shard}"`)).toBe(3);
    expect(value(text, 'seckill_dead_letters', `shard="${shard}"`)).toBe(0);

    // A worker's group reads one entry: 1 pending, 2 still lagging; a dead letter appears.
    await store.ensureGroup(shard);
    // A client without the prefix: ioredis does not prefix the keys after STREAMS.
    const raw = new Redis(testRedisUrl());
    await raw.xreadgroup('GROUP', ORDER_GROUP, 'probe', 'COUNT', 1, 'STREAMS', `${env.keyPrefix}${stream}`, '>').finally(() => raw.disconnect());
    await env.redis.xadd(deadLetters, '*', 'orderId', '1', 'error', 'test');
    text = await scrape(app);
    expect(value(text, 'seckill_consumer_lag', `shard="${shard}"`)).toBe(2);
    expect(value(text, 'seckill_stream_pending', `shard="${shard}"`)).toBe(1);
    expect(value(text, 'seckill_dead_letters', `shard="${shard}"`)).toBe(1);
    for (let other = 0; other < env.config.seckill.streamShards; other += 1) {
      if (other === shard) continue;
      expect(value(text, 'seckill_consumer_lag', `shard="${other}"`)).toBe(0);
      expect(value(text, 'seckill_dead_letters', `shard="${other}"`)).toBe(0);
    }
    // Orders per second = rate() of this counter (accepted by the API) and of the worker's created.
    expect(value(text, 'seckill_requests_total', 'strategy="async",outcome="accepted"')).toBe(3);
    expect(text).toContain('# TYPE seckill_worker_entries_total counter');
    expect(value(text, 'http_request_duration_seconds_count', 'method="POST",route="/api/voucher-order/seckill/:id",status="200"')).toBe(3);
    expect(text).toContain('# TYPE rate_limit_rejections_total counter');
  });

  it('shows how long requests waited for distributed locks (sync strategy: one user lock)', async () => {
    const app = await appWith({ strategy: 'sync' });
    const voucherId = await insertSeckillVoucher(env, { stock: 10 });
    const user = users[5]!;
    const answers = await Promise.all(Array.from({ length: 5 }, () => buy(app, user.token, voucherId)));
    expect(answers.filter((answer) => answer.json().success)).toHaveLength(1);

    const text = await scrape(app);
    const labels = 'lock="order",kind="reentrant",outcome="acquired"';
    expect(value(text, 'lock_wait_seconds_count', labels)).toBe(5);
    // Four of five waited for the one before them: the total wait is above zero and below the test's length.
    const waited = value(text, 'lock_wait_seconds_sum', labels)!;
    expect(waited).toBeGreaterThan(0);
    expect(waited).toBeLessThan(30);
    expect(value(text, 'lock_wait_seconds_bucket', `le="+Inf",${labels}`)).toBe(5);
  });
});
