import { spawn, type ChildProcess } from 'node:child_process';
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import { answerOf } from '../../src/http/error-answers.js';
import type { Metrics } from '../../src/infra/metrics.js';
import { SECKILL_ERROR_ANSWERS } from '../../src/modules/seckill/error-routes.js';
import { NearCache } from '../../src/lib/near-cache/index.js';
import type { Seckill } from '../../src/modules/seckill/index.js';
import { voucherListCacheKey } from '../../src/modules/seckill/keys.js';
import { SoldOutMemory } from '../../src/modules/seckill/sale/sold-out-memory.js';
import type { AcceptedOrder } from '../../src/modules/seckill/types.js';
import { parseEntry } from '../../src/modules/seckill/writer/order-stream.js';
import type { TestEnv } from './test-env.js';

/** Fixtures of the flash sale, shared by the sale's tests, the HTTP and abuse tests and the browser tests. */

export const HOUR = 3600_000;

/** The HTTP status the routes answer a sale's error with (src/modules/seckill/error-routes.ts); undefined for an error of no row. */
export const statusOf = (error: unknown): number | undefined => answerOf(SECKILL_ERROR_ANSWERS, error)?.status;

/** The orders of stream entries (reserve.lua writes one entry per batch), in order; a malformed entry fails the test. */
export function ordersOfEntries(entries: ReadonlyArray<[id: string, fields: string[]]>): AcceptedOrder[] {
  return entries.flatMap(([id, fields]) => {
    const orders = parseEntry(id, fields);
    if (orders === null) throw new Error(`stream entry ${id} holds no valid order: ${fields.join(' ')}`);
    return orders;
  });
}

/** A seckill voucher straight into MySQL (the HTTP path is tested in vouchers.test.ts). */
export async function insertSeckillVoucher(
  env: TestEnv,
  {
    stock,
    begin = new Date(Date.now() - HOUR),
    end = new Date(Date.now() + HOUR),
    shopId = '1',
    title = 'seckill',
  }: { stock: number; begin?: Date; end?: Date; shopId?: string; title?: string },
): Promise<string> {
  const result = await env.db
    .insertInto('tb_voucher')
    .values({ shop_id: shopId, title, pay_value: '100', actual_value: '200', type: 1 })
    .executeTakeFirstOrThrow();
  const voucherId = String(result.insertId);
  const wholeSecond = (date: Date) => new Date(Math.floor(date.getTime() / 1000) * 1000);
  await env.db
    .insertInto('tb_seckill_voucher')
    .values({ voucher_id: voucherId, stock, begin_time: wholeSecond(begin), end_time: wholeSecond(end) })
    .execute();
  // Like any writer outside the app: the shop's cached voucher list is dropped (apps list the new voucher at once).
  await env.redis.del(voucherListCacheKey(shopId));
  return voucherId;
}

export function buy(app: FastifyInstance, token: string, voucherId: string) {
  return app.inject({ method: 'POST', url: `/api/voucher-order/seckill/${voucherId}`, headers: { authorization: token } });
}

export async function mysqlOrders(env: TestEnv, voucherId: string) {
  return env.db.selectFrom('tb_voucher_order').selectAll().where('voucher_id', '=', voucherId).execute();
}

export async function mysqlStock(env: TestEnv, voucherId: string): Promise<number> {
  const row = await env.db.selectFrom('tb_seckill_voucher').select('stock').where('voucher_id', '=', voucherId).executeTakeFirstOrThrow();
  return row.stock;
}

/**
 * The invariants of a finished sale: exactly `stock` orders from distinct users, stock 0 in
 * MySQL and Redis, and every order a client was told about present in MySQL.
 */
export async function expectSoldOutExactly(
  env: TestEnv,
  voucherId: string,
  stock: number,
  acceptedOrderIds: string[],
  redisStock: () => Promise<number | undefined>,
) {
  const orders = await mysqlOrders(env, voucherId);
  expect(orders).toHaveLength(stock);
  expect(new Set(orders.map((order) => order.user_id)).size).toBe(stock);
  expect(await mysqlStock(env, voucherId)).toBe(0);
  expect(await redisStock()).toBe(0);
  expect(acceptedOrderIds).toHaveLength(stock);
  expect(new Set(orders.map((order) => order.id))).toEqual(new Set(acceptedOrderIds));
}

/**
 * `src/cli/order-worker.ts` in a child process on the test's database and key prefix, with stable
 * consumer name `consumer` and a claim idle time long enough that no other consumer takes its
 * entries over during a test (recovery is then the restarted consumer's own). `env` adds or
 * overrides settings. The caller kills it after the test.
 */
export function orderWorkerProcess(testEnv: TestEnv, consumer: string, env: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', 'src/cli/order-worker.ts'], {
    env: {
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      MYSQL_URL: testEnv.mysqlUrl,
      REDIS_KEY_PREFIX: testEnv.keyPrefix,
      SECKILL_STREAM_SHARDS: '2',
      SECKILL_CONSUMER: consumer,
      SECKILL_CLAIM_IDLE_MS: '600000',
      ...env,
    },
    stdio: 'ignore',
  });
}

/**
 * The cancellations an instance counted in `seckill_release_lateness_seconds{by}`, and how many of
 * them within 1 s of their due time (the histogram's `le="1"` bucket): the lateness the code itself
 * measured, not the test's timings.
 */
export async function releaseLateness(metrics: Metrics, by: 'queue' | 'rabbitmq' | 'sweep'): Promise<{ count: number; withinOneSecond: number }> {
  const values = (await metrics.releaseLateness.get()).values.filter((value) => value.labels.by === by);
  const count = values.find((value) => value.metricName === 'seckill_release_lateness_seconds_count')?.value ?? 0;
  const withinOneSecond =
    values.find((value) => value.metricName === 'seckill_release_lateness_seconds_bucket' && (value.labels as Record<string, unknown>).le === 1)?.value ?? 0;
  return { count, withinOneSecond };
}

/** A sold-out memory of `seckill`'s sale on a near cache of its own (tracking on); close `near` after. */
export async function soldOutMemoryOf(env: TestEnv, seckill: Pick<Seckill, 'keys' | 'sale'>): Promise<{ memory: SoldOutMemory; near: NearCache }> {
  const near = new NearCache(env.redis, { maxEntries: 100 });
  expect(await near.start()).toBe(true);
  return { memory: new SoldOutMemory(seckill.keys, near, (id) => seckill.sale.layouts.routedBuckets(id)), near };
}
