import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { Connection } from 'rabbitmq-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../../../src/infra/config.js';
import { createMetrics, type Metrics } from '../../../../src/infra/metrics.js';
import { buildSeckill, type Seckill } from '../../../../src/modules/seckill/index.js';
import { ORDER_GROUP } from '../../../../src/modules/seckill/keys.js';
import { buildRabbitPath } from '../../../../src/modules/seckill/broker/rabbit-path.js';
import { ORDER_QUEUE } from '../../../../src/modules/seckill/broker/rabbit-topology.js';
import { orderFields, parseEntry } from '../../../../src/modules/seckill/writer/order-stream.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, metricsAuth, type TestEnv } from '../../../support/test-env.js';
import { brokerRelay, createTestVhost, type BrokerRelay, type TestVhost } from '../../../support/rabbitmq.js';
import { buy, insertSeckillVoucher, mysqlOrders, mysqlStock, orderWorkerProcess } from '../../../support/seckill.js';
import { eventually } from '../../../support/eventually.js';

/**
 * The outbox relay's guarantees over RabbitMQ: a crash between the broker's confirm and the XACK
 * publishes again (the writer drops the copy), and a broker that is unreachable or stalled costs
 * no accepted order: they wait in the stream and are written once it answers again.
 */
let vhost: TestVhost;
let env: TestEnv;
let net: BrokerRelay;
const log = pino({ level: 'silent' });
/** Closed after each test: its sales' jobs and apps must not consume the next test's orders. */
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  vhost = await createTestVhost();
  env = await createTestEnv({
    SECKILL_QUEUE: 'rabbitmq',
    SECKILL_STREAM_SHARDS: '2',
    RABBITMQ_URL: vhost.url,
    RABBITMQ_CONNECT_TIMEOUT_MS: '1000',
    SECKILL_RABBITMQ_PUBLISH_TIMEOUT_MS: '1000',
    // No relay takes over another's entries here: a republish is the restarted relay's own.
    SECKILL_CLAIM_IDLE_MS: '600000',
  });
  net = await brokerRelay();
});

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

afterAll(async () => {
  await net?.close();
  await env?.cleanup();
  await vhost?.delete();
});

/** The env's configuration reaching RabbitMQ through the test's relay, with a 2 s request deadline (health probes within 1 s). */
function configViaRelay(): Config {
  const { seckill, deadlines } = env.config;
  return {
    ...env.config,
    deadlines: { ...deadlines, requestMs: 2_000 },
    seckill: { ...seckill, rabbitmq: { ...seckill.rabbitmq, urls: [vhost.urlVia(net.port)] } },
  };
}

function sale(consumerName: string, metrics: Metrics = createMetrics()): Seckill {
  const seckill = buildSeckill({ config: env.config, redis: env.redis, db: env.db, log, metrics, consumerName });
  closers.push(() => seckill.close());
  return seckill;
}

async function readyMessages(queue: string): Promise<number> {
  const rabbit = new Connection(vhost.url);
  try {
    return (await rabbit.queueDeclare({ queue, passive: true })).messageCount;
  } finally {
    await rabbit.close();
  }
}

async function expectNothingPending(seckill: Seckill): Promise<void> {
  await eventually(async () => {
    for (const shard of seckill.keys.allShards()) {
      const { stream, queued } = seckill.keys.shard(shard);
      const [pending] = (await env.redis.xpending(stream, ORDER_GROUP)) as [number];
      expect(pending).toBe(0);
      expect(await env.redis.hlen(queued)).toBe(0);
    }
    expect(await readyMessages(ORDER_QUEUE)).toBe(0);
  }, 30_000);
}

async function expectWrittenOnce(seckill: Seckill, voucherId: string, accepted: string[], stock: number): Promise<void> {
  await eventually(async () => expect(await mysqlOrders(env, voucherId)).toHaveLength(accepted.length), 30_000);
  const orders = await mysqlOrders(env, voucherId);
  expect(new Set(orders.map((order) => order.id))).toEqual(new Set(accepted));
  expect(await mysqlStock(env, voucherId)).toBe(stock - accepted.length);
  expect((await seckill.sale.reads.read(voucherId))?.stock).toBe(stock - accepted.length);
  await expectNothingPending(seckill);
}

function metricValue(text: string, line: string): number {
  const found = text.split('\n').find((candidate) => candidate.startsWith(`${line} `));
  return found === undefined ? 0 : Number(found.split(' ').at(-1));
}

async function appVia(config: Config, consumerName: string): Promise<FastifyInstance> {
  const { app } = await buildTestApp({ ...env, config: { ...config, seckill: { ...config.seckill, workerEnabled: true } } }, undefined, { consumerName });
  closers.push(() => app.close());
  return app;
}

/** `src/cli/order-worker.ts` on this env in rabbitmq mode, killed after the test if still running. */
function workerProcess(consumer: string): ChildProcess {
  const child = orderWorkerProcess(env, consumer, { SECKILL_QUEUE: 'rabbitmq', RABBITMQ_URL: vhost.url });
  closers.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  });
  return child;
}

describe('the outbox relay (SECKILL_QUEUE=rabbitmq)', () => {
  it('a relay that crashed between the broker confirm and its XACK publishes again on restart; the writer drops the copy, MySQL has each order once', async () => {
    const stock = 50;
    const voucherId = await insertSeckillVoucher(env, { stock });
    const placer = sale('placer'); // decides orders, runs no jobs
    const accepted = await Promise.all(Array.from({ length: 30 }, (_, i) => placer.placement.place(String(70_001 + i), voucherId)));

    // The crash: consumer `crashy` reads the entries, the broker confirms every publish, and the
    // process dies before its XACK.
    const crashed = buildRabbitPath({
      settings: env.config.seckill,
      redis: env.redis,
      stream: placer.stream,
      settlement: placer.sale.settlement,
      orders: placer.orders,
      log,
      consumer: 'crashy',
      cancelDue: (due) => placer.canceller.cancelDue(due, 'rabbitmq'),
    });
    const shard = placer.keys.shardOf(voucherId);
    await placer.stream.ensureGroup(shard);
    const entries = await placer.stream.read(shard, 'crashy', '>', 100);
    const published = entries.flatMap(([id, fields]) => parseEntry(id, fields)!.map((order) => ({ id, order })));
    expect(published).toHaveLength(30);
    const outcomes = await Promise.all(published.map(({ id, order }) => crashed.publisher.publish(shard, id, orderFields(order), order.orderId)));
    expect(outcomes.every((outcome) => outcome === 'confirmed')).toBe(true);
    await crashed.publisher.close();
    await crashed.broker.close();
    const { stream } = placer.keys.shard(shard);
    expect(((await env.redis.xpending(stream, ORDER_GROUP)) as [number])[0]).toBe(entries.length);
    expect(await readyMessages(ORDER_QUEUE)).toBe(30);

    // Restarted under the same name: its relay publishes its pending entries again; its writer gets every order twice.
    const metrics = createMetrics();
    const restarted = sale('crashy', metrics);
    restarted.startJobs();
    await expectWrittenOnce(restarted, voucherId, accepted, stock);
    // Each order's second copy is dropped as a duplicate (the copies may still be in hand a moment after the rows are in).
    await eventually(async () => {
      const scraped = await metrics.render();
      expect(metricValue(scraped, 'seckill_worker_entries_total{result="duplicate"}')).toBeGreaterThanOrEqual(30);
      expect(metricValue(scraped, 'seckill_worker_entries_total{result="created"}')).toBe(30);
    });
  });

  it('an order worker process in rabbitmq mode SIGKILLed mid-sale and restarted leaves every accepted order in MySQL exactly once', async () => {
    const stock = 3000;
    const voucherId = await insertSeckillVoucher(env, { stock });
    const placer = sale('placer');
    const place = (first: number, count: number) => Promise.all(Array.from({ length: count }, (_, i) => placer.placement.place(String(first + i), voucherId)));
    const accepted = await place(100_001, 2000);

    const first = workerProcess('process');
    await eventually(async () => expect((await mysqlOrders(env, voucherId)).length).toBeGreaterThan(0), 30_000);
    first.kill('SIGKILL');
    await once(first, 'exit');
    accepted.push(...(await place(200_001, 300))); // the sale goes on while no worker runs

    const second = workerProcess('process');
    await expectWrittenOnce(sale('checker'), voucherId, accepted, stock);
    second.kill('SIGTERM'); // graceful: the relay, the writer and the connection close, the process exits by itself
    const [code] = await once(second, 'exit');
    expect(code).toBe(0);
  }, 90_000);

  it('RabbitMQ unreachable: orders are still accepted into the stream, health says degraded naming it, and they are written once it is back', async () => {
    const users = await createUsersWithSessions(env, 40, 16_000_000_000);
    const voucherId = await insertSeckillVoucher(env, { stock: 40 });
    net.cut();
    const app = await appVia(configViaRelay(), 'edge-cut');
    const health = await app.inject({ url: '/api/health' });
    expect(health.statusCode).toBe(200);
    expect(health.json().data).toEqual({ status: 'degraded', redis: 'up', mysql: 'up', rabbitmq: 'down' });
    expect((await app.inject({ url: '/metrics', headers: metricsAuth })).body).toMatch(/^seckill_rabbitmq_up\{address="[^"]+"\} 0$/m);

    const bodies = (await Promise.all(users.map((user) => buy(app, user.token, voucherId)))).map((response) => response.json());
    expect(bodies.every((body) => body.success)).toBe(true);
    const accepted = bodies.map((body) => body.data as string);
    expect(await mysqlOrders(env, voucherId)).toHaveLength(0); // no way to MySQL but through the broker

    net.restore();
    await expectWrittenOnce(sale('checker'), voucherId, accepted, 40);
    await eventually(async () => expect((await app.inject({ url: '/api/health' })).json().data.rabbitmq).toBe('up'));
  });

  it('RabbitMQ stalled: health says stalled within its probe time, orders are accepted, and written once when it answers again', async () => {
    const users = await createUsersWithSessions(env, 20, 17_000_000_000);
    const voucherId = await insertSeckillVoucher(env, { stock: 20 });
    net.restore();
    const app = await appVia(configViaRelay(), 'edge-stall');
    await eventually(async () => expect((await app.inject({ url: '/api/health' })).json().data.rabbitmq).toBe('up'));

    net.stall();
    // Answered by the probe's bound (1 s), not by the request deadline's 503 (2 s).
    const health = await app.inject({ url: '/api/health' });
    expect(health.json().data).toEqual({ status: 'degraded', redis: 'up', mysql: 'up', rabbitmq: 'stalled' });
    const bodies = (await Promise.all(users.map((user) => buy(app, user.token, voucherId)))).map((response) => response.json());
    expect(bodies.every((body) => body.success)).toBe(true);
    const accepted = bodies.map((body) => body.data as string);

    // Long enough for the relay's publishes to time out (1 s) at least once; short of the heartbeat's verdict.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    net.restore();
    await expectWrittenOnce(sale('checker'), voucherId, accepted, 20);
  });
});
