import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSeckill } from '../../../../src/modules/seckill/index.js';
import { OrderStream } from '../../../../src/modules/seckill/writer/order-stream.js';
import { buildSale, type Sale } from '../../../../src/modules/seckill/sale/sale.js';
import { SALE_KEYS_KEPT_AFTER_END_MS, SaleKeys } from '../../../../src/modules/seckill/keys.js';
import { REFUSALS } from '../../../../src/modules/seckill/messages.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, metricsAuth, type TestEnv } from '../../../support/test-env.js';
import { scanKeys } from '../../../support/redis.js';
import { HOUR, buy, expectSoldOutExactly, insertSeckillVoucher, mysqlOrders, mysqlStock, ordersOfEntries } from '../../../support/seckill.js';
import { eventually } from '../../../support/eventually.js';

let env: TestEnv;
let instances: FastifyInstance[];
let users: Array<{ id: string; token: string }>;
let sale: Sale;
/** Unprefixed seckill keys before this file ran: a local app (no prefix) may share this Redis. */
let strayBefore: string[];

beforeAll(async () => {
  strayBefore = await scanKeys('{seckill:*');
  env = await createTestEnv({ SECKILL_STRATEGY: 'async', SECKILL_WORKER: 'true', SECKILL_STREAM_SHARDS: '3' });
  users = await createUsersWithSessions(env, 1000);
  // Two app instances on the same Redis and MySQL, each with its own worker, like two servers behind a load balancer.
  instances = [];
  for (const consumerName of ['instance-a', 'instance-b']) {
    instances.push((await buildTestApp(env, undefined, { consumerName })).app);
  }
  sale = buildSale(env.redis, new SaleKeys(env.config.seckill.streamShards));
});

afterAll(async () => {
  for (const app of instances ?? []) await app.close();
  await env?.cleanup();
});

const redisStock = (voucherId: string) => async () => (await sale.reads.read(voucherId))?.stock;

describe('async seckill (Lua + stream + worker)', () => {
  it('2,000 concurrent requests from 1,000 users on stock 100: exactly 100 orders, no oversell, none lost', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 100 });
    const requests = Array.from({ length: 2000 }, (_, i) => {
      const user = users[i % 1000]!;
      return buy(instances[i % 2]!, user.token, voucherId);
    });
    const responses = await Promise.all(requests);
    const bodies = responses.map((response) => response.json());
    expect(responses.every((response) => response.statusCode === 200)).toBe(true);

    const accepted = bodies.filter((body) => body.success).map((body) => body.data as string);
    const refusals = new Set(bodies.filter((body) => !body.success).map((body) => body.errorMsg));
    expect(accepted).toHaveLength(100);
    expect([...refusals].every((message) => message === REFUSALS.soldOut || message === REFUSALS.alreadyBought)).toBe(true);

    await eventually(async () => expect(await mysqlOrders(env, voucherId)).toHaveLength(100));
    await expectSoldOutExactly(env, voucherId, 100, accepted, redisStock(voucherId));
    // And every order leaves the queued list once it is in MySQL.
    for (const shard of [0, 1, 2]) await eventually(async () => expect(await env.redis.hlen(sale.keys.shard(shard).queued)).toBe(0));

    // The sale's keys expire a week after its end; acknowledged stream entries can be trimmed.
    const { voucher, buyers, stream } = sale.keys.voucher(voucherId);
    const end = (await sale.reads.read(voucherId))!.end.getTime();
    for (const key of [voucher, buyers]) {
      const expiresAt = Date.now() + (await env.redis.pttl(key));
      expect(Math.abs(expiresAt - (end + SALE_KEYS_KEPT_AFTER_END_MS))).toBeLessThan(5_000);
    }
    expect(ordersOfEntries(await env.redis.xrange(stream, '-', '+')).filter((order) => order.voucherId === voucherId)).toHaveLength(100);
    await new OrderStream(env.redis, sale.keys).trimAcknowledged(sale.keys.shardOf(voucherId));
    expect(await env.redis.xlen(stream)).toBeLessThanOrEqual(1); // the last delivered entry marks the group's place
  });

  it('one user sending 50 concurrent requests gets exactly one order', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 10 });
    const user = users[0]!;
    const responses = await Promise.all(Array.from({ length: 50 }, (_, i) => buy(instances[i % 2]!, user.token, voucherId)));
    const bodies = responses.map((response) => response.json());
    expect(bodies.filter((body) => body.success)).toHaveLength(1);
    expect(bodies.filter((body) => body.errorMsg === REFUSALS.alreadyBought)).toHaveLength(49);
    await eventually(async () => expect(await mysqlOrders(env, voucherId)).toHaveLength(1));
    expect(await mysqlStock(env, voucherId)).toBe(9);
    expect(await redisStock(voucherId)()).toBe(9);
  });

  it('refuses before and after the sale window and leaves the stock untouched', async () => {
    const early = await insertSeckillVoucher(env, { stock: 5, begin: new Date(Date.now() + HOUR), end: new Date(Date.now() + 2 * HOUR) });
    const late = await insertSeckillVoucher(env, { stock: 5, begin: new Date(Date.now() - 2 * HOUR), end: new Date(Date.now() - HOUR) });
    const { app } = { app: instances[0]! };
    const notStarted = await buy(app, users[1]!.token, early);
    expect(notStarted.json()).toEqual({ success: false, errorMsg: REFUSALS.notStarted });
    // A sale that is over is answered from MySQL and never (re)published to Redis.
    const ended = await buy(app, users[1]!.token, late);
    expect(ended.json()).toEqual({ success: false, errorMsg: REFUSALS.ended });
    expect(await redisStock(early)()).toBe(5);
    expect(await sale.reads.read(late)).toBeNull();
    for (const voucherId of [early, late]) {
      expect(await mysqlStock(env, voucherId)).toBe(5);
      expect(await mysqlOrders(env, voucherId)).toHaveLength(0);
    }
  });

  it('tells unknown vouchers and anonymous users apart from refusals', async () => {
    const app = instances[0]!;
    const unknown = await buy(app, users[2]!.token, '99999999');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().errorMsg).toBe(REFUSALS.unknownVoucher('99999999'));
    const anonymous = await app.inject({ method: 'POST', url: '/api/voucher-order/seckill/1' });
    expect(anonymous.statusCode).toBe(401);
  });

  it('lets the buyer follow the order from queued to created to paid; others cannot see it', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 3 });
    const app = instances[1]!;
    const [buyer, other] = [users[3]!, users[4]!];
    const get = (token: string, orderId: string) => app.inject({ url: `/api/voucher-order/${orderId}`, headers: { authorization: token } });

    // Without a worker the order stays queued: take it from a Redis script call directly.
    const seckill = buildSeckill({ config: env.config, redis: env.redis, db: env.db, log: app.log });
    const queuedId = await seckill.placement.place(other.id, voucherId);
    expect(['queued', 'created']).toContain((await get(other.token, queuedId)).json().data.state);

    const orderId = (await buy(app, buyer.token, voucherId)).json().data as string;
    expect(orderId).toMatch(/^\d{16,19}$/); // a 64-bit id, as a string
    await eventually(async () => expect((await get(buyer.token, orderId)).json().data.state).toBe('created'));
    expect((await get(other.token, orderId)).statusCode).toBe(404);

    const pay = () => app.inject({ method: 'POST', url: `/api/voucher-order/${orderId}/pay`, headers: { authorization: buyer.token } });
    const paid = await pay();
    expect(paid.json().data).toMatchObject({ id: orderId, voucherId, state: 'paid', payTime: expect.any(String) });
    expect((await pay()).json().data.state).toBe('paid'); // paying twice is harmless
    expect((await app.inject({ method: 'POST', url: `/api/voucher-order/${orderId}/pay`, headers: { authorization: other.token } })).statusCode).toBe(404);
  });
});

/** The value of one sample in Prometheus text format (0 when absent). */
function sample(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name}{${labels}}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

/** How many written orders' lags the scrape counts (a histogram without labels). */
const writeLagCount = (text: string): number => Number(/^seckill_order_write_lag_seconds_count (\S+)$/m.exec(text)?.[1] ?? 0);

describe('metrics', () => {
  it('counts outcomes, worker results and request durations at GET /metrics', async () => {
    const app = instances[0]!;
    const scrape = async () => (await app.inject({ url: '/metrics', headers: metricsAuth })).body;
    const before = await scrape();
    const voucherId = await insertSeckillVoucher(env, { stock: 2 });
    for (const user of users.slice(500, 503)) await buy(app, user.token, voucherId);
    await eventually(async () => expect(await mysqlOrders(env, voucherId)).toHaveLength(2));

    const after = await scrape();
    const delta = (name: string, labels: string) => sample(after, name, labels) - sample(before, name, labels);
    expect(delta('seckill_requests_total', 'strategy="async",outcome="accepted"')).toBe(2);
    expect(delta('seckill_requests_total', 'strategy="async",outcome="sold-out"')).toBe(1);
    expect(delta('http_request_duration_seconds_count', 'method="POST",route="/api/voucher-order/seckill/:id",status="200"')).toBe(3);
    // Both instances' workers write orders; together they wrote these two.
    const written = await Promise.all(
      instances.map(async (instance) =>
        sample((await instance.inject({ url: '/metrics', headers: metricsAuth })).body, 'seckill_worker_entries_total', 'result="created"'),
      ),
    );
    expect(written.reduce((sum, value) => sum + value, 0)).toBeGreaterThanOrEqual(2);
    // Each written order's lag from acceptance to commit, by the instance that wrote it.
    const lags = await Promise.all(instances.map(async (instance) => writeLagCount((await instance.inject({ url: '/metrics', headers: metricsAuth })).body)));
    expect(lags.reduce((sum, value) => sum + value, 0)).toBe(written.reduce((sum, value) => sum + value, 0));
    expect(after).toMatch(/^seckill_stream_pending\{shard="0"\} \d+$/m);
    expect(after).toContain('process_cpu_user_seconds_total');
  });

  it('shows the Redis stock of each open sale as seckill_stock_left{voucher_id}, read at scrape time', async () => {
    const app = instances[0]!;
    const open = await insertSeckillVoucher(env, { stock: 5 });
    const ended = await insertSeckillVoucher(env, { stock: 5, begin: new Date(Date.now() - 2 * HOUR), end: new Date(Date.now() + 2_000) });
    for (const voucherId of [open, ended]) await buy(app, users[600]!.token, voucherId); // publishes both to Redis
    const gauge = (body: string, voucherId: string) => new RegExp(`^seckill_stock_left\\{voucher_id="${voucherId}"\\} (\\d+)$`, 'm').exec(body)?.[1];

    const first = (await app.inject({ url: '/metrics', headers: metricsAuth })).body;
    expect(gauge(first, open)).toBe('4');
    expect(gauge(first, ended)).toBe('4');
    await buy(app, users[601]!.token, open);
    await eventually(async () => expect(gauge((await app.inject({ url: '/metrics', headers: metricsAuth })).body, ended)).toBeUndefined(), 5_000);
    const later = (await app.inject({ url: '/metrics', headers: metricsAuth })).body;
    expect(gauge(later, open)).toBe('3');
  });
});

describe('key hygiene', () => {
  it('writes every seckill key under the configured prefix (nothing escapes client-side prefixing)', async () => {
    expect((await scanKeys('{seckill:*')).filter((key) => !strayBefore.includes(key))).toEqual([]);
    expect((await scanKeys(`${env.keyPrefix}{seckill:*`)).length).toBeGreaterThan(0);
  });
});
