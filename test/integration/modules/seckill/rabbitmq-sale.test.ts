import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { Connection } from 'rabbitmq-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics, type Metrics } from '../../../../src/infra/metrics.js';
import { buildSeckill, type Seckill } from '../../../../src/modules/seckill/index.js';
import { ORDER_GROUP } from '../../../../src/modules/seckill/keys.js';
import { REFUSALS } from '../../../../src/modules/seckill/messages.js';
import { DEAD_LETTER_QUEUE, ORDER_QUEUE } from '../../../../src/modules/seckill/broker/rabbit-topology.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, metricsAuth, type TestEnv } from '../../../support/test-env.js';
import { createTestVhost, type TestVhost } from '../../../support/rabbitmq.js';
import { buy, expectSoldOutExactly, insertSeckillVoucher, mysqlOrders, mysqlStock } from '../../../support/seckill.js';
import { eventually } from '../../../support/eventually.js';

/**
 * SECKILL_QUEUE=rabbitmq against the machine's RabbitMQ, in a vhost of this file's own: the
 * streams are the outbox, a relay moves them to a quorum queue, writers consume it into MySQL.
 */
let vhost: TestVhost;
let env: TestEnv;
let instances: FastifyInstance[];
let users: Array<{ id: string; token: string }>;
/** Processes of the sale built by a test itself (a relay that crashes, one that restarts); closed after. */
const extra: Seckill[] = [];

beforeAll(async () => {
  vhost = await createTestVhost();
  env = await createTestEnv({
    SECKILL_QUEUE: 'rabbitmq',
    SECKILL_WORKER: 'true',
    SECKILL_STREAM_SHARDS: '3',
    SECKILL_MAX_DELIVERIES: '3',
    RABBITMQ_URL: vhost.url,
    // Relays never take over each other's entries here: a republish is the restarted relay's own.
    SECKILL_CLAIM_IDLE_MS: '600000',
  });
  users = await createUsersWithSessions(env, 1000);
  // Two app instances, each with its relay and order writer, like two servers behind a load balancer.
  instances = [];
  for (const consumerName of ['instance-a', 'instance-b']) instances.push((await buildTestApp(env, undefined, { consumerName })).app);
});

afterAll(async () => {
  for (const seckill of extra) await seckill.close();
  for (const app of instances ?? []) await app.close();
  await env?.cleanup();
  await vhost?.delete();
});

function sale(consumerName: string, metrics: Metrics = createMetrics()): Seckill {
  const seckill = buildSeckill({ config: env.config, redis: env.redis, db: env.db, log: pino({ level: 'silent' }), metrics, consumerName });
  extra.push(seckill);
  return seckill;
}

const seckillOf = () => sale('reader');
const redisStock = (seckill: Seckill, voucherId: string) => async () => (await seckill.sale.reads.read(voucherId))?.stock;

/** Nothing pending: no stream entry unacknowledged, no order queued in Redis, no message ready in the order queue. */
async function expectNothingPending(seckill: Seckill): Promise<void> {
  await eventually(async () => {
    for (const shard of seckill.keys.allShards()) {
      const { stream, queued, queuedByUser } = seckill.keys.shard(shard);
      const [pending] = (await env.redis.xpending(stream, ORDER_GROUP)) as [number];
      expect(pending).toBe(0);
      expect(await env.redis.hlen(queued)).toBe(0);
      expect(await env.redis.zcard(queuedByUser)).toBe(0);
    }
    expect(await readyMessages(ORDER_QUEUE)).toBe(0);
  });
}

async function readyMessages(queue: string): Promise<number> {
  const rabbit = new Connection(vhost.url);
  try {
    return (await rabbit.queueDeclare({ queue, passive: true })).messageCount;
  } finally {
    await rabbit.close();
  }
}

/** A metric's value summed over the scraped texts (lines `name{labels} value`). */
function sumOf(texts: string[], name: string, labels: string): number {
  let total = 0;
  for (const text of texts) {
    for (const line of text.split('\n')) if (line.startsWith(`${name}{${labels}}`)) total += Number(line.split(' ').at(-1));
  }
  return total;
}

async function scrapeInstances(): Promise<string[]> {
  return Promise.all(instances.map(async (app) => (await app.inject({ url: '/metrics', headers: metricsAuth })).body));
}

async function deadLettersOf(seckill: Seckill, voucherId: string): Promise<Array<Record<string, string>>> {
  const entries = await env.redis.xrange(seckill.keys.voucher(voucherId).deadLetters, '-', '+');
  return entries
    .map(([, fields]) => {
      const map: Record<string, string> = {};
      for (let i = 0; i < fields.length; i += 2) map[fields[i]!] = fields[i + 1]!;
      return map;
    })
    .filter((entry) => entry.voucherId === voucherId);
}

describe('the sale over RabbitMQ (SECKILL_QUEUE=rabbitmq)', () => {
  it('2,000 concurrent requests from 1,000 users on stock 100: MySQL holds exactly the accepted orders, nothing pending, no oversell', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 100 });
    const responses = await Promise.all(Array.from({ length: 2000 }, (_, i) => buy(instances[i % 2]!, users[i % 1000]!.token, voucherId)));
    const bodies = responses.map((response) => response.json());
    const accepted = bodies.filter((body) => body.success).map((body) => body.data as string);
    expect(accepted).toHaveLength(100);
    expect(bodies.filter((body) => !body.success).every((body) => body.errorMsg === REFUSALS.soldOut || body.errorMsg === REFUSALS.alreadyBought)).toBe(true);

    const seckill = seckillOf();
    await eventually(async () => expect(await mysqlOrders(env, voucherId)).toHaveLength(100), 30_000);
    await expectSoldOutExactly(env, voucherId, 100, accepted, redisStock(seckill, voucherId));
    await expectNothingPending(seckill);

    // Every order went through the broker: confirmed publishes and orders written by the queue's writers.
    const scraped = await scrapeInstances();
    expect(sumOf(scraped, 'seckill_relay_publishes_total', 'outcome="confirmed"')).toBeGreaterThanOrEqual(100);
    expect(sumOf(scraped, 'seckill_worker_entries_total', 'result="created"')).toBeGreaterThanOrEqual(100);
    // Every order written has its lag from acceptance to commit counted, on this path too.
    const lagCounts = scraped.map((text) => Number(/^seckill_order_write_lag_seconds_count (\S+)$/m.exec(text)?.[1] ?? 0));
    expect(lagCounts.reduce((sum, count) => sum + count, 0)).toBe(sumOf(scraped, 'seckill_worker_entries_total', 'result="created"'));
    expect(scraped.every((text) => /^seckill_rabbitmq_up\{address="amqp:\/\/guest:\*\*\*@[^"]+"\} 1$/m.test(text))).toBe(true);
    const health = await instances[0]!.inject({ url: '/api/health' });
    expect(health.statusCode).toBe(200);
    expect(health.json().data).toEqual({ status: 'up', redis: 'up', mysql: 'up', rabbitmq: 'up' });
  });

  it('an order that keeps failing reaches the dead-letter exchange after the delivery limit; its unit and slot come back exactly once', async () => {
    // MySQL has no stock left but Redis believes there is one: every write of the order fails for its own sake.
    const voucherId = await insertSeckillVoucher(env, { stock: 0 });
    const seckill = seckillOf();
    await seckill.sale.publisher.publish({ voucherId, stock: 1, begin: new Date(Date.now() - 60_000), end: new Date(Date.now() + 3600_000) });
    const response = await buy(instances[0]!, users[500]!.token, voucherId);
    const orderId = response.json().data as string;
    expect(response.json().success).toBe(true);
    expect((await seckill.sale.reads.read(voucherId))?.stock).toBe(0);

    // Three deliveries (SECKILL_MAX_DELIVERIES), a second apart, then the dead-letter queue's consumer gives it up.
    const [dead] = await eventually(async () => {
      const records = await deadLettersOf(seckill, voucherId);
      expect(records).toHaveLength(1);
      return records;
    }, 30_000);
    expect(dead).toMatchObject({ orderId, userId: users[500]!.id, voucherId, deliveries: '3', error: expect.stringContaining('no stock left in MySQL') });
    expect((await seckill.sale.reads.read(voucherId))?.stock).toBe(1); // the unit is back
    expect(await seckill.sale.reads.isBuyer(voucherId, users[500]!.id)).toBe(false); // the slot too: the user may buy again
    expect(await mysqlOrders(env, voucherId)).toHaveLength(0);
    await expectNothingPending(seckill);
    expect(await readyMessages(DEAD_LETTER_QUEUE)).toBe(0);
    await eventually(async () => expect(sumOf(await scrapeInstances(), 'seckill_worker_entries_total', 'result="dead-letter"')).toBe(1));

    // The same dead letter delivered again (its consumer crashed before the ack): handled again,
    // recorded again, and the unit is not given back a second time.
    const rabbit = new Connection(vhost.url);
    const publisher = rabbit.createPublisher({ confirm: true });
    const { sourceId, deliveries: _deliveries, error: _error, ...fields } = dead!;
    await publisher.send(
      { routingKey: DEAD_LETTER_QUEUE, durable: true },
      { shard: seckill.keys.shardOf(voucherId), entryId: sourceId, fields: Object.entries(fields).flat() },
    );
    await publisher.close();
    await rabbit.close();
    await eventually(async () => expect(await deadLettersOf(seckill, voucherId)).toHaveLength(2), 20_000);
    expect((await seckill.sale.reads.read(voucherId))?.stock).toBe(1);
    expect(await mysqlStock(env, voucherId)).toBe(0);
  });
});
