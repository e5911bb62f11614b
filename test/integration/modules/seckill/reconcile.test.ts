import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSeckill } from '../../../../src/modules/seckill/index.js';
import { OrderStatus } from '../../../../src/modules/seckill/record/order-repository.js';
import { REFUSALS } from '../../../../src/modules/seckill/messages.js';
import { reconcileSeckill } from '../../../../src/modules/seckill/admin/reconcile.js';
import { buildSale, type Sale } from '../../../../src/modules/seckill/sale/sale.js';
import { SaleKeys } from '../../../../src/modules/seckill/keys.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';
import { buy, insertSeckillVoucher, mysqlOrders, mysqlStock } from '../../../support/seckill.js';
import { eventually } from '../../../support/eventually.js';
import { runReconcileCli } from '../../../support/reconcile-cli.js';

let env: TestEnv;
let app: FastifyInstance;
let users: Array<{ id: string; token: string }>;
let sale: Sale;
let seckill: ReturnType<typeof buildSeckill>;

beforeAll(async () => {
  // No worker in the app: the tests decide when queued orders are written.
  env = await createTestEnv({ SECKILL_STRATEGY: 'async', SECKILL_STREAM_SHARDS: '2' });
  users = await createUsersWithSessions(env, 600);
  app = (await buildTestApp(env)).app;
  sale = buildSale(env.redis, new SaleKeys(env.config.seckill.streamShards));
  seckill = buildSeckill({ config: env.config, redis: env.redis, db: env.db, consumerName: 'reconcile-test', log: pino({ level: 'silent' }) });
});

afterAll(async () => {
  await seckill?.worker.stop();
  await app?.close();
  await env?.cleanup();
});

const deps = () => ({ db: env.db, sale });
const check = (voucherIds: string[]) => reconcileSeckill(deps(), { repair: false, voucherIds });
const repair = (voucherIds: string[]) => reconcileSeckill(deps(), { repair: true, voucherIds, drainTimeoutMs: 10_000 });

/** A voucher with `bought` orders placed through the app and written to MySQL. */
async function saleWithOrders(stock: number, bought: number, firstUser: number): Promise<string> {
  const voucherId = await insertSeckillVoucher(env, { stock });
  for (let i = 0; i < bought; i += 1) expect((await buy(app, users[firstUser + i]!.token, voucherId)).json().success).toBe(true);
  await seckill.worker.drainOnce();
  return voucherId;
}

describe('reconcileSeckill', () => {
  it('finds no drift in a consistent sale with orders written, queued, and written but still in the queued hash', async () => {
    const voucherId = await saleWithOrders(10, 3, 0);
    for (let i = 3; i < 6; i += 1) expect((await buy(app, users[i]!.token, voucherId)).json().success).toBe(true);
    // An order between the worker's commit and its HDEL is in MySQL and queued: counted once.
    const written = (await mysqlOrders(env, voucherId))[0]!;
    await env.redis.hset(sale.keys.voucher(voucherId).queued, written.id, `${written.user_id}:${voucherId}`);

    const report = await check([voucherId]);
    expect(report).toEqual({ vouchers: 1, drifted: [], repaired: 0, skipped: [] });
    expect(await mysqlStock(env, voucherId)).toBe(7);
    expect((await sale.reads.read(voucherId))!.stock).toBe(4);
    await env.redis.hdel(sale.keys.voucher(voucherId).queued, written.id);
    await seckill.worker.drainOnce();
  });

  it('detects and repairs stock too high, stock too low, a missing and an extra buyer', async () => {
    const high = await saleWithOrders(10, 2, 10);
    const low = await saleWithOrders(10, 2, 20);
    const missing = await saleWithOrders(10, 2, 30);
    const extra = await saleWithOrders(10, 2, 40);
    await env.redis.hincrby(sale.keys.voucher(high).voucher, 'stock', 3);
    await env.redis.hincrby(sale.keys.voucher(low).voucher, 'stock', -2);
    await env.redis.hdel(sale.keys.voucher(missing).buyers, users[30]!.id);
    await env.redis.hset(sale.keys.voucher(extra).buyers, '987654321', 1);

    const found = await check([high, low, missing, extra]);
    expect(found.vouchers).toBe(4);
    expect(found.repaired).toBe(0);
    const byId = new Map(found.drifted.map((drift) => [drift.voucherId, drift]));
    expect(byId.get(high)).toEqual({ voucherId: high, mysqlStock: 8, redisStock: 11, expectedStock: 8, missingBuyers: [], extraBuyers: [] });
    expect(byId.get(low)).toMatchObject({ mysqlStock: 8, redisStock: 6, expectedStock: 8 });
    expect(byId.get(missing)).toMatchObject({ redisStock: 8, missingBuyers: [users[30]!.id], extraBuyers: [] });
    expect(byId.get(extra)).toMatchObject({ redisStock: 8, missingBuyers: [], extraBuyers: ['987654321'] });

    const repaired = await repair([high, low, missing, extra]);
    expect(repaired.drifted).toHaveLength(4);
    expect(repaired.repaired).toBe(4);
    expect(repaired.skipped).toEqual([]);
    expect(await check([high, low, missing, extra])).toMatchObject({ drifted: [] });
    // The repaired rules hold: the restored buyer cannot buy twice, the stranger can buy.
    expect((await buy(app, users[30]!.token, missing)).json().errorMsg).toBe(REFUSALS.alreadyBought);
    const stock = (await sale.reads.read(high))!.stock;
    expect(stock).toBe(8);
    const voucher = await env.redis.hgetall(sale.keys.voucher(high).voucher);
    expect(voucher.frozen_until).toBeUndefined();
  });

  it('re-publishes a voucher missing from Redis, with its buyers', async () => {
    const voucherId = await saleWithOrders(5, 3, 50);
    const { voucher, buyers } = sale.keys.voucher(voucherId);
    await env.redis.del(voucher, buyers);

    const found = await check([voucherId]);
    expect(found.drifted).toEqual([
      { voucherId, mysqlStock: 2, redisStock: null, expectedStock: 2, missingBuyers: [users[50]!.id, users[51]!.id, users[52]!.id].sort(), extraBuyers: [] },
    ]);
    expect(await repair([voucherId])).toMatchObject({ repaired: 1, skipped: [] });
    expect((await sale.reads.read(voucherId))!.stock).toBe(2);
    expect(await env.redis.hlen(buyers)).toBe(3);
    expect(await env.redis.pttl(buyers)).toBeGreaterThan(0);
    expect((await buy(app, users[50]!.token, voucherId)).json().errorMsg).toBe(REFUSALS.alreadyBought);
    expect((await check([voucherId])).drifted).toEqual([]);
  });

  it('counts a cancelled order as held until the canceller releases it, and repairs it exactly once', async () => {
    const voucherId = await saleWithOrders(5, 2, 60);
    const order = (await mysqlOrders(env, voucherId))[0]!;
    // The canceller's MySQL step (status, live, stock + 1) without its Redis release yet.
    await env.db.transaction().execute(async (trx) => {
      await trx.updateTable('tb_voucher_order').set({ status: OrderStatus.cancelled, live: null }).where('id', '=', order.id).execute();
      await trx
        .updateTable('tb_seckill_voucher')
        .set((eb) => ({ stock: eb('stock', '+', 1) }))
        .where('voucher_id', '=', voucherId)
        .execute();
    });
    expect((await check([voucherId])).drifted).toEqual([]);
    await env.redis.hset(sale.keys.voucher(voucherId).buyers, '123', 1); // some drift so that the repair writes
    expect((await repair([voucherId])).repaired).toBe(1);
    expect((await sale.reads.read(voucherId))!.stock).toBe(3); // still held by the cancelled order
    // The canceller's sweep now releases it: + 1 once, and everything agrees.
    await seckill.canceller.runOnce();
    expect((await sale.reads.read(voucherId))!.stock).toBe(4);
    expect(await env.redis.hexists(sale.keys.voucher(voucherId).buyers, order.user_id)).toBe(0);
    expect((await check([voucherId])).drifted).toEqual([]);
    // A repair after the release keeps it released (its marker decides inside the script).
    await env.redis.hincrby(sale.keys.voucher(voucherId).voucher, 'stock', 1);
    expect((await repair([voucherId])).repaired).toBe(1);
    expect((await sale.reads.read(voucherId))!.stock).toBe(4);
  });

  it('gives up on a voucher whose queued orders are not written in time, and lifts its pause', async () => {
    const voucherId = await saleWithOrders(5, 0, 0);
    expect((await buy(app, users[70]!.token, voucherId)).json().success).toBe(true);
    await env.redis.hincrby(sale.keys.voucher(voucherId).voucher, 'stock', 1);
    const report = await reconcileSeckill(deps(), { repair: true, voucherIds: [voucherId], drainTimeoutMs: 300 });
    expect(report.repaired).toBe(0);
    expect(report.drifted).toHaveLength(1);
    expect(report.skipped).toEqual([{ voucherId, reason: expect.stringContaining('queued orders not written') }]);
    expect((await buy(app, users[71]!.token, voucherId)).json().success).toBe(true); // not left paused
    await seckill.worker.drainOnce();
    await env.redis.hincrby(sale.keys.voucher(voucherId).voucher, 'stock', -1);
    expect((await check([voucherId])).drifted).toEqual([]);
  });

  it('leaves a missing voucher missing (not a placeholder of stock 0) when its repair gives up', async () => {
    const voucherId = await saleWithOrders(5, 0, 0);
    expect((await buy(app, users[72]!.token, voucherId)).json().success).toBe(true);
    await env.redis.del(sale.keys.voucher(voucherId).voucher);
    const report = await reconcileSeckill(deps(), { repair: true, voucherIds: [voucherId], drainTimeoutMs: 200 });
    expect(report.skipped).toHaveLength(1);
    expect(await env.redis.exists(sale.keys.voucher(voucherId).voucher)).toBe(0);
    await seckill.worker.drainOnce();
    expect((await repair([voucherId])).repaired).toBe(1);
    expect((await sale.reads.read(voucherId))!.stock).toBe(4);
    expect(await env.redis.hget(sale.keys.voucher(voucherId).voucher, 'paused_created')).toBeNull();
  });

  it('repairs during a running sale: orders keep coming, none oversold or lost, zero drift after', async () => {
    seckill.worker.start();
    const stock = 400;
    const voucherId = await insertSeckillVoucher(env, { stock });
    const buyers = users.slice(100, 600);
    // Drift that would matter: a stranger's buyer mark and 2 units too few in Redis.
    expect((await buy(app, buyers[0]!.token, voucherId)).json().success).toBe(true);
    await env.redis.hset(sale.keys.voucher(voucherId).buyers, '555555', 1);
    await env.redis.hincrby(sale.keys.voucher(voucherId).voucher, 'stock', -2);

    const accepted: string[] = [];
    const refusals = new Map<string, number>();
    let selling = true;
    const buying = (async () => {
      // Waves of 10 buyers, 10 ms apart, until the repair is over (and a few waves more). At most
      // 300 buyers go before the repair ends, so stock is left for the waves after it however long it takes.
      for (let wave = 0, after = 0; after < 5 && 1 + wave * 10 < buyers.length; wave += 1) {
        while (selling && wave * 10 >= 300) await sleep(5);
        if (!selling) after += 1;
        const batch = buyers.slice(1 + wave * 10, 1 + wave * 10 + 10);
        const bodies = (await Promise.all(batch.map((user) => buy(app, user.token, voucherId)))).map((response) => response.json());
        for (const body of bodies) {
          if (body.success) accepted.push(body.data);
          else refusals.set(body.errorMsg, (refusals.get(body.errorMsg) ?? 0) + 1);
        }
        await sleep(10);
      }
    })();
    // The repair starts once the sale has taken orders (a first wave can take longer than 100 ms on a busy machine).
    await expect.poll(() => accepted.length).toBeGreaterThan(0);
    const acceptedBefore = accepted.length;
    const report = await repair([voucherId]);
    const acceptedDuring = accepted.length;
    selling = false;
    await buying;
    // The sale really ran around the repair: orders were taken before it and after it.
    expect(acceptedBefore).toBeGreaterThan(0);
    expect(accepted.length).toBeGreaterThan(acceptedDuring);

    expect(report.skipped).toEqual([]);
    expect(report.repaired).toBe(1);
    expect(report.drifted[0]!.extraBuyers).toEqual(['555555']);
    const orders = accepted.length + 1;
    await eventually(async () => expect(await mysqlOrders(env, voucherId)).toHaveLength(orders));
    const rows = await mysqlOrders(env, voucherId);
    expect(new Set(rows.map((row) => row.user_id)).size).toBe(rows.length);
    expect(rows.length).toBeLessThanOrEqual(stock);
    expect(await mysqlStock(env, voucherId)).toBe(stock - rows.length);
    expect((await sale.reads.read(voucherId))!.stock).toBe(stock - rows.length);
    expect((await check([voucherId])).drifted).toEqual([]);
    for (const message of refusals.keys()) expect([REFUSALS.frozen, REFUSALS.alreadyBought, REFUSALS.soldOut]).toContain(message);
    await seckill.worker.stop();
  });
});

describe('npm run reconcile (CLI)', () => {
  const run = (...args: string[]) => runReconcileCli(env, args);

  it('exits 2 on bad options, 1 on drift (JSON report), 0 after --repair and when clean', async () => {
    expect((await run('--bogus')).code).toBe(2);
    const badId = await run('--voucher', 'abc');
    expect(badId.code).toBe(2);
    expect(badId.stderr).toContain('--voucher must be a voucher id');
    expect((await run('--voucher', '999999999')).code).toBe(2);

    const voucherId = await saleWithOrders(10, 1, 80);
    await env.redis.hincrby(sale.keys.voucher(voucherId).voucher, 'stock', 5);
    const drifted = await run('--voucher', voucherId, '--json');
    expect(drifted.code).toBe(1);
    expect(JSON.parse(drifted.stdout)).toMatchObject({ vouchers: 1, repaired: 0, drifted: [{ voucherId, redisStock: 14, expectedStock: 9 }] });

    const repaired = await run('--voucher', voucherId, '--repair');
    expect(repaired.code).toBe(0);
    expect(repaired.stdout).toContain('1 drifted, 1 repaired');
    const clean = await run('--json');
    expect(clean.code).toBe(0);
    expect(JSON.parse(clean.stdout).drifted).toEqual([]);
  }, 60_000);
});
