import pino from 'pino';
import { Connection } from 'rabbitmq-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSeckill, type Seckill } from '../../../../src/modules/seckill/index.js';
import { ORDER_GROUP } from '../../../../src/modules/seckill/keys.js';
import { buildRabbitPath, type RabbitPath } from '../../../../src/modules/seckill/broker/rabbit-path.js';
import type { PublishOutcome } from '../../../../src/modules/seckill/broker/confirmed-publisher.js';
import { ORDER_QUEUE } from '../../../../src/modules/seckill/broker/rabbit-topology.js';
import { createTestEnv, type TestEnv } from '../../../support/test-env.js';
import { createTestVhost, type TestVhost } from '../../../support/rabbitmq.js';
import { insertSeckillVoucher, mysqlOrders, mysqlStock } from '../../../support/seckill.js';
import { eventually } from '../../../support/eventually.js';

/** A full order queue (x-max-length, reject-publish) slows the relay; the orders wait in the stream, none is lost. */
let vhost: TestVhost;
let env: TestEnv;
let seckill: Seckill;
let path: RabbitPath;
const outcomes: PublishOutcome[] = [];

beforeAll(async () => {
  vhost = await createTestVhost();
  env = await createTestEnv({
    SECKILL_QUEUE: 'rabbitmq',
    SECKILL_STREAM_SHARDS: '1',
    RABBITMQ_URL: vhost.url,
    SECKILL_RABBITMQ_MAX_LENGTH: '10',
    // One publish in flight: a quorum queue enforces its length on what it has applied, so a
    // window of publishes may pass the limit together; one at a time, the 11th or so is refused.
    SECKILL_RABBITMQ_PUBLISH_WINDOW: '1',
  });
  const log = pino({ level: 'silent' });
  seckill = buildSeckill({ config: env.config, redis: env.redis, db: env.db, log, consumerName: 'placer' });
  path = buildRabbitPath({
    settings: env.config.seckill,
    redis: env.redis,
    stream: seckill.stream,
    settlement: seckill.sale.settlement,
    orders: seckill.orders,
    log,
    consumer: 'relay',
    cancelDue: (due) => seckill.canceller.cancelDue(due, 'rabbitmq'),
    onPublished: (outcome) => outcomes.push(outcome),
  });
});

afterAll(async () => {
  await path?.stop();
  await seckill?.close();
  await env?.cleanup();
  await vhost?.delete();
});

async function readyMessages(): Promise<number> {
  const rabbit = new Connection(vhost.url);
  try {
    return (await rabbit.queueDeclare({ queue: ORDER_QUEUE, passive: true })).messageCount;
  } finally {
    await rabbit.close();
  }
}

async function unacknowledged(): Promise<number> {
  const [pending] = (await env.redis.xpending(seckill.keys.shard(0).stream, ORDER_GROUP)) as [number];
  return pending;
}

describe('backpressure (SECKILL_QUEUE=rabbitmq)', () => {
  it('a full queue refuses publishes: the relay keeps the rest in the stream and moves them once writers drain the queue; MySQL has each order once', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 60 });
    const accepted = await Promise.all(Array.from({ length: 50 }, (_, i) => seckill.placement.place(String(80_001 + i), voucherId)));

    // No writer yet: the queue fills up to its length and refuses the rest.
    path.relay.start();
    await eventually(() => expect(outcomes).toContain('rejected'));
    const queued = await readyMessages();
    expect(queued).toBeLessThan(50);
    expect(await unacknowledged()).toBeGreaterThan(0); // waiting in the stream, not lost
    expect(await mysqlOrders(env, voucherId)).toHaveLength(0);

    path.writer.start();
    await eventually(async () => expect(await mysqlOrders(env, voucherId)).toHaveLength(50), 30_000);
    const orders = await mysqlOrders(env, voucherId);
    expect(new Set(orders.map((order) => order.id))).toEqual(new Set(accepted));
    expect(await mysqlStock(env, voucherId)).toBe(10);
    await eventually(async () => {
      expect(await unacknowledged()).toBe(0);
      expect(await env.redis.hlen(seckill.keys.shard(0).queued)).toBe(0);
      expect(await readyMessages()).toBe(0);
    });
  });
});
