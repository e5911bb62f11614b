/**
 * The reconciliation of a voucher sold from B buckets (docs/flows/reconciliation.md#buckets) on
 * real Redis and MariaDB: Σ over the buckets of stock and pending against MySQL's stock less the
 * queued orders, each user's slots in its home bucket; a transfer pending (a refill that died) is
 * reported, not drift; `--repair` moves units into the buckets (their versions bumped, so the
 * sold-out rule sees them), rewrites each bucket's buyers, and is safe while the sale runs.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcileSeckill } from '../../../../src/modules/seckill/admin/reconcile.js';
import { SaleControls } from '../../../../src/modules/seckill/admin/sale-controls.js';
import { buildSeckill } from '../../../../src/modules/seckill/index.js';
import { homeBucket, SaleKeys, type BucketRef } from '../../../../src/modules/seckill/keys.js';
import { buildSale } from '../../../../src/modules/seckill/sale/sale.js';
import { REFUSALS } from '../../../../src/modules/seckill/messages.js';
import { defineSaleScripts } from '../../../../src/modules/seckill/sale/sale-scripts.js';
import { readBuckets } from '../../../../src/modules/seckill/sale/transfers.js';
import type { ReserveResult } from '../../../../src/modules/seckill/types.js';
import { eventually } from '../../../support/eventually.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';
import { buy, insertSeckillVoucher, mysqlOrders, mysqlStock, statusOf, soldOutMemoryOf } from '../../../support/seckill.js';
import { runReconcileCli } from '../../../support/reconcile-cli.js';

let env: TestEnv;
let seckill: ReturnType<typeof buildSeckill>;
let app: FastifyInstance;
let nextUser = 6_000_000;
let nextOrder = 9_500_000_000;

beforeAll(async () => {
  // No worker running unless a test starts it: the tests decide when queued orders are written.
  env = await createTestEnv({ SECKILL_MAX_BUCKETS: '8', SECKILL_STREAM_SHARDS: '2' });
  seckill = buildSeckill({ config: env.config, redis: env.redis, db: env.db, consumerName: 'reconcile-buckets', log: pino({ level: 'silent' }) });
  app = (await buildTestApp(env)).app;
});

afterAll(async () => {
  await seckill?.worker.stop();
  await app?.close();
  await seckill?.close();
  await env?.cleanup();
});

const check = (voucherIds: string[]) => reconcileSeckill({ db: env.db, sale: seckill.sale }, { repair: false, voucherIds });
const repair = (voucherIds: string[]) => reconcileSeckill({ db: env.db, sale: seckill.sale }, { repair: true, voucherIds, drainTimeoutMs: 10_000 });

async function bucketedSale(stock: number, buckets: number): Promise<string> {
  const voucherId = await insertSeckillVoucher(env, { stock });
  await env.db.updateTable('tb_seckill_voucher').set({ buckets, total_stock: stock }).where('voucher_id', '=', voucherId).execute();
  return voucherId;
}

function usersHomingTo(bucket: number, buckets: number, count: number): string[] {
  const users: string[] = [];
  while (users.length < count) {
    const userId = String(nextUser++);
    if (homeBucket(userId, buckets) === bucket) users.push(userId);
  }
  return users;
}

/** Orders placed one after another (refills included); a 503 (units still moving) is retried as a client does. */
async function place(voucherId: string, users: string[]): Promise<ReserveResult[]> {
  const results: ReserveResult[] = [];
  for (const userId of users) {
    for (let attempt = 1; ; attempt += 1) {
      try {
        results.push(await seckill.sale.decider.decide({ orderId: String(nextOrder++), userId, voucherId }));
        break;
      } catch (error) {
        if (statusOf(error) !== 503 || attempt === 20) throw error;
      }
    }
  }
  return results;
}

/** The worker's passes until MySQL holds `count` orders of the voucher. */
async function written(voucherId: string, count: number): Promise<void> {
  for (let pass = 0; pass < 10 && (await mysqlOrders(env, voucherId)).length < count; pass += 1) await seckill.worker.drainOnce();
  expect(await mysqlOrders(env, voucherId)).toHaveLength(count);
}

/** A buy as a client makes it: a 503 with Retry-After (units still moving between buckets) is retried. */
async function buyRetrying(token: string, voucherId: string) {
  for (let attempt = 1; ; attempt += 1) {
    const answer = await buy(app, token, voucherId);
    if (answer.statusCode !== 503 || attempt === 20) return answer;
  }
}

const bucket = (index: number, of: number): BucketRef => ({ index, of });
const unitsIn = async (voucherId: string, buckets: number) =>
  (await readBuckets(env.redis, seckill.keys, voucherId, buckets)).map(({ stock, pending }) => stock + pending);
const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);
const scripts = () => defineSaleScripts(env.redis, seckill.keys);

describe('reconciling a bucketed sale', () => {
  it('reports nothing for a clean sale with refills, orders written and orders still queued', async () => {
    const voucherId = await bucketedSale(30, 3);
    // Every buyer homes to bucket 0 (10 units): the last 4 of the first 14 came by refills from the others.
    expect((await place(voucherId, usersHomingTo(0, 3, 14))).every(({ outcome }) => outcome === 'accepted')).toBe(true);
    await written(voucherId, 14);
    expect((await place(voucherId, [...usersHomingTo(1, 3, 2), ...usersHomingTo(2, 3, 2)])).every(({ outcome }) => outcome === 'accepted')).toBe(true);

    expect(await check([voucherId])).toEqual({ vouchers: 1, drifted: [], repaired: 0, skipped: [] });
    expect(await repair([voucherId])).toEqual({ vouchers: 1, drifted: [], repaired: 0, skipped: [] });
    expect(sum(await unitsIn(voucherId, 3))).toBe(12);
    await written(voucherId, 18);
    expect(await check([voucherId])).toMatchObject({ drifted: [] });
  });

  it('finds stock drift in one bucket and repairs it into the buckets, bumping the versions so the sold-out rule sees the units', async () => {
    const voucherId = await bucketedSale(20, 2);
    await place(voucherId, [...usersHomingTo(0, 2, 2), ...usersHomingTo(1, 2, 2)]);
    await written(voucherId, 4);
    const one = seckill.keys.bucket(voucherId, bucket(1, 2)).voucher;
    await env.redis.hincrby(one, 'stock', 3);
    expect((await check([voucherId])).drifted).toEqual([
      { voucherId, mysqlStock: 16, redisStock: 19, expectedStock: 16, missingBuyers: [], extraBuyers: [], buckets: 2, missingBuckets: [] },
    ]);
    expect(await repair([voucherId])).toMatchObject({ repaired: 1, skipped: [] });
    expect(sum(await unitsIn(voucherId, 2))).toBe(16);
    expect(await check([voucherId])).toMatchObject({ drifted: [] });

    // Too low: every unit gone from Redis, the voucher "sold out" and remembered so; the repair puts the units back.
    const zero = seckill.keys.bucket(voucherId, bucket(0, 2)).voucher;
    await env.redis.hset(zero, 'stock', 0);
    await env.redis.hset(one, 'stock', 0);
    const { memory, near } = await soldOutMemoryOf(env, seckill);
    try {
      await memory.remember(voucherId);
      expect(memory.known(voucherId)).toBe(true);
      expect((await check([voucherId])).drifted).toMatchObject([{ redisStock: 0, expectedStock: 16 }]);
      expect(await repair([voucherId])).toMatchObject({ repaired: 1, skipped: [] });
      expect(await unitsIn(voucherId, 2)).toEqual([8, 8]);
      await eventually(() => expect(memory.known(voucherId)).toBe(false));
    } finally {
      await near.close();
    }
    // Every unit sells again, to buyers of one bucket (refills from the other), and no more.
    const late = await place(voucherId, usersHomingTo(1, 2, 20));
    expect(late.filter(({ outcome }) => outcome === 'accepted')).toHaveLength(16);
    expect(late.filter(({ outcome }) => outcome === 'sold-out')).toHaveLength(4);
    await written(voucherId, 20);
    expect(await mysqlStock(env, voucherId)).toBe(0);
    expect(await check([voucherId])).toMatchObject({ drifted: [] });
  });

  it('reports a transfer left pending by a crash, before and after its give, without counting its units twice or as drift', async () => {
    const voucherId = await bucketedSale(12, 2);
    await place(voucherId, usersHomingTo(1, 2, 2));
    await written(voucherId, 2);
    // A refill of bucket 1 takes 3 of bucket 0's 6 units and dies.
    expect(await scripts().take({ voucherId, bucket: bucket(0, 2), transferId: 'dead-refill', to: 1, most: 64 })).toBe(3);
    const taken = await check([voucherId]);
    expect(taken).toMatchObject({ drifted: [], skipped: [] });
    expect(taken.pendingTransfers).toEqual([
      { voucherId, transferId: 'dead-refill', from: 0, to: 1, units: 3, ageMs: expect.any(Number) as number, given: false },
    ]);
    // Its give happened, its settle did not: the units are in bucket 1 and still in bucket 0's pending.
    expect(await scripts().transferIn({ voucherId, bucket: bucket(1, 2), transferId: 'dead-refill', mode: 'give', units: 3 })).toBe(true);
    expect(sum(await unitsIn(voucherId, 2))).toBe(13);
    const given = await check([voucherId]);
    expect(given.drifted).toEqual([]);
    expect(given.pendingTransfers).toMatchObject([{ transferId: 'dead-refill', given: true }]);

    // A repair (drift elsewhere: a stranger's mark) ends the transfer as the sweep would, and counts its units once.
    const stranger = usersHomingTo(0, 2, 1)[0]!;
    await env.redis.hset(seckill.keys.bucket(voucherId, bucket(0, 2)).buyers, stranger, 1);
    expect(await repair([voucherId])).toMatchObject({ repaired: 1, drifted: [{ extraBuyers: [stranger] }] });
    expect(await env.redis.hlen(seckill.keys.transfers(seckill.keys.laneShard(bucket(0, 2))))).toBe(0);
    expect(await unitsIn(voucherId, 2)).toEqual([3, 7]);
    const after = await check([voucherId]);
    expect(after).toMatchObject({ drifted: [] });
    expect(after.pendingTransfers).toBeUndefined();
  });

  it('counts units pending without a transfer as drift, and a frozen bucket gives no units to a refill', async () => {
    const voucherId = await bucketedSale(10, 2);
    await place(voucherId, usersHomingTo(0, 2, 1));
    await written(voucherId, 1);
    // pending left behind with no transfer recorded: "sold out" could never be decided while it stays.
    await env.redis.hset(seckill.keys.bucket(voucherId, bucket(1, 2)).voucher, 'pending', 2);
    expect((await check([voucherId])).drifted).toMatchObject([{ redisStock: 11, expectedStock: 9 }]);
    expect(await repair([voucherId])).toMatchObject({ repaired: 1, skipped: [] });
    expect((await readBuckets(env.redis, seckill.keys, voucherId, 2)).map(({ stock, pending }) => [stock, pending])).toEqual([
      [4, 0],
      [5, 0],
    ]);

    const sale = { voucherId, begin: new Date(Date.now() - 60_000), end: new Date(Date.now() + 3_600_000) };
    await seckill.sale.administration.freezeBuckets(sale, 2, 'test-freeze', 60_000);
    expect(await scripts().take({ voucherId, bucket: bucket(1, 2), transferId: 'during-freeze', to: 0, most: 64 })).toBe(0);
    await seckill.sale.administration.thawBuckets(voucherId, 2, 'test-freeze');
    expect(await scripts().take({ voucherId, bucket: bucket(1, 2), transferId: 'after-thaw', to: 0, most: 64 })).toBe(3);
    await seckill.sale.transfers.sweep(0);
    expect(await check([voucherId])).toMatchObject({ drifted: [] });
  });

  it('leaves a bucketed sale unchecked, with the reason, where the sale keys have no bucket lanes', async () => {
    const voucherId = await bucketedSale(10, 3);
    await place(voucherId, usersHomingTo(0, 3, 1));
    const withoutLanes = buildSale(env.redis, new SaleKeys(env.config.seckill.streamShards));
    expect(await reconcileSeckill({ db: env.db, sale: withoutLanes }, { repair: true, voucherIds: [voucherId] })).toEqual({
      vouchers: 1,
      drifted: [],
      repaired: 0,
      skipped: [],
      unchecked: [{ voucherId, reason: 'sold from 3 buckets, and these sale keys have no bucket lanes to read them in' }],
    });
    await written(voucherId, 1);
  });

  it("drops the buckets' totals in a repair, so that the next stock control seeds them from MySQL's total", async () => {
    const voucherId = await bucketedSale(20, 2);
    await place(voucherId, [...usersHomingTo(0, 2, 2), ...usersHomingTo(1, 2, 2)]);
    await written(voucherId, 4);
    await env.redis.hincrby(seckill.keys.bucket(voucherId, bucket(0, 2)).voucher, 'stock', -3);
    expect(await repair([voucherId])).toMatchObject({ repaired: 1, skipped: [] });
    const totals = async () => Promise.all([0, 1].map((index) => env.redis.hget(seckill.keys.bucket(voucherId, bucket(index, 2)).voucher, 'total')));
    expect(await totals()).toEqual([null, null]);
    // A raise to 30 units in all: 16 left + 10 more, and the buckets' totals sum to MySQL's.
    expect(await new SaleControls(env.db, seckill.sale).update(voucherId, '1', { stock: 30 })).toMatchObject({ stock: 30, left: 26 });
    expect(sum((await totals()).map(Number))).toBe(30);
    expect(sum(await unitsIn(voucherId, 2))).toBe(26);
    expect(await mysqlStock(env, voucherId)).toBe(26);
    expect(await check([voucherId])).toMatchObject({ drifted: [] });
  });

  it('finds buyers missing from their home bucket and marks in another bucket, and repairs both', async () => {
    const voucherId = await bucketedSale(12, 3);
    const [a, b, c] = [usersHomingTo(0, 3, 1)[0]!, usersHomingTo(1, 3, 1)[0]!, usersHomingTo(2, 3, 1)[0]!];
    await place(voucherId, [a, b, c]);
    await written(voucherId, 3);
    await env.redis.hdel(seckill.keys.bucket(voucherId, bucket(1, 3)).buyers, b);
    // a's mark copied into bucket 2, where a does not home: extra there (and harmless for a, which still holds its own).
    await env.redis.hset(seckill.keys.bucket(voucherId, bucket(2, 3)).buyers, a, 1);
    expect((await check([voucherId])).drifted).toEqual([
      { voucherId, mysqlStock: 9, redisStock: 9, expectedStock: 9, missingBuyers: [b], extraBuyers: [a], buckets: 3, missingBuckets: [] },
    ]);
    expect(await repair([voucherId])).toMatchObject({ repaired: 1, skipped: [] });
    expect(await check([voucherId])).toMatchObject({ drifted: [] });
    expect(await env.redis.hget(seckill.keys.bucket(voucherId, bucket(1, 3)).buyers, b)).toBe('1');
    expect(await env.redis.hexists(seckill.keys.bucket(voucherId, bucket(2, 3)).buyers, a)).toBe(0);
    const [again] = await place(voucherId, [b]);
    expect(again).toMatchObject({ outcome: 'already-bought' });
  });

  it('repairs during a running sale with refills under way: orders keep coming, none oversold or lost, zero drift after', async () => {
    // Every buyer homes to bucket 0 (20 of the 60 units): from its 21st order on, each unit comes by a refill, during the repair too.
    const users = await createUsersWithSessions(env, 300, 17_000_000_000);
    const buyers = users.filter((user) => homeBucket(user.id, 3) === 0);
    expect(buyers.length).toBeGreaterThanOrEqual(80);
    const stock = 60;
    const voucherId = await bucketedSale(stock, 3);
    seckill.worker.start();
    try {
      expect((await buyRetrying(buyers[0]!.token, voucherId)).json().success).toBe(true);
      // Drift that would matter: 2 units too few in a donor bucket, a stranger's mark in another.
      await env.redis.hincrby(seckill.keys.bucket(voucherId, bucket(1, 3)).voucher, 'stock', -2);
      const stranger = usersHomingTo(2, 3, 1)[0]!;
      await env.redis.hset(seckill.keys.bucket(voucherId, bucket(2, 3)).buyers, stranger, 1);

      const accepted: string[] = [];
      const refusals = new Map<string, number>();
      let selling = true;
      const sale = (async () => {
        // Waves of 8 buyers until the repair is over and a few waves more; at most 40 go before it ends.
        for (let wave = 0, after = 0; after < 4 && 1 + wave * 8 < buyers.length; wave += 1) {
          while (selling && wave * 8 >= 40) await sleep(5);
          if (!selling) after += 1;
          const batch = buyers.slice(1 + wave * 8, 1 + wave * 8 + 8);
          const bodies = (await Promise.all(batch.map((user) => buyRetrying(user.token, voucherId)))).map((response) => response.json());
          for (const body of bodies) {
            if (body.success) accepted.push(body.data);
            else refusals.set(body.errorMsg, (refusals.get(body.errorMsg) ?? 0) + 1);
          }
          await sleep(10);
        }
      })();
      await expect.poll(() => accepted.length).toBeGreaterThan(0);
      const report = await repair([voucherId]);
      const acceptedDuring = accepted.length;
      selling = false;
      await sale;
      expect(accepted.length).toBeGreaterThan(acceptedDuring);

      expect(report).toMatchObject({ repaired: 1, skipped: [], drifted: [{ extraBuyers: [stranger] }] });
      const orders = accepted.length + 1;
      await eventually(async () => expect(await mysqlOrders(env, voucherId)).toHaveLength(orders));
      const rows = await mysqlOrders(env, voucherId);
      expect(new Set(rows.map((row) => row.user_id)).size).toBe(rows.length);
      expect(await mysqlStock(env, voucherId)).toBe(stock - rows.length);
      expect(sum(await unitsIn(voucherId, 3))).toBe(stock - rows.length);
      expect(await check([voucherId])).toMatchObject({ drifted: [] });
      expect(rows.length).toBeLessThanOrEqual(stock);
      for (const message of refusals.keys()) expect([REFUSALS.frozen, REFUSALS.alreadyBought, REFUSALS.soldOut]).toContain(message);
    } finally {
      await seckill.worker.stop();
    }
  }, 60_000);
});

describe('npm run reconcile (CLI) where SECKILL_MAX_BUCKETS is unset', () => {
  const run = (...args: string[]) => runReconcileCli(env, args);

  /** A bucketed sale of 12 units in 3 buckets with two orders written, and a one-bucket sale with one, 2 units too many in Redis. */
  async function twoDriftedSales(): Promise<{ bucketed: string; single: string; lost: string }> {
    const bucketed = await bucketedSale(12, 3);
    const [kept, lost] = [usersHomingTo(0, 3, 1)[0]!, usersHomingTo(1, 3, 1)[0]!];
    await place(bucketed, [kept, lost]);
    await written(bucketed, 2);
    const single = await insertSeckillVoucher(env, { stock: 10 });
    await place(single, [String(nextUser++)]);
    await written(single, 1);
    await env.redis.hincrby(seckill.keys.voucher(single).voucher, 'stock', 2);
    return { bucketed, single, lost };
  }

  it('checks and repairs a bucketed sale whose buyer record was lost by its own bucket count, beside a one-bucket sale', async () => {
    const { bucketed, single, lost } = await twoDriftedSales();
    await env.redis.del(seckill.keys.bucket(bucketed, bucket(1, 3)).buyers);

    const found = await run('--voucher', bucketed, '--voucher', single);
    expect(found.stdout).toContain(`voucher ${bucketed}: stock redis=10 expected=10 (mysql 10); missing buyers ${lost}\n`);
    expect(found.stdout).toContain(`voucher ${single}: stock redis=11 expected=9 (mysql 9)\n`);
    expect(found.stdout).toMatch(/reconcile: 2 drifted, 0 repaired\n$/);
    expect(found.code).toBe(1);

    const repaired = await run('--voucher', bucketed, '--voucher', single, '--repair');
    expect(repaired.stdout).toMatch(/reconcile: 2 drifted, 2 repaired\n$/);
    expect(repaired.code).toBe(0);
    expect(await env.redis.hget(seckill.keys.bucket(bucketed, bucket(1, 3)).buyers, lost)).toBe('1');

    const clean = await run('--voucher', bucketed, '--voucher', single);
    expect(clean.stdout).toMatch(/reconcile: no drift\n$/);
    expect(clean.code).toBe(0);
  }, 60_000);

  it('says which sales it did not check and why, in the verdict and with exit code 4 (1 when drift is left as well)', async () => {
    const { bucketed, single } = await twoDriftedSales();
    // Redis's layout record names 2 buckets, MySQL's row 3: reading either way could misread the sale.
    const layout = seckill.keys.voucher(bucketed).voucher;
    await env.redis.hset(layout, 'buckets', 2);

    const alone = await run('--voucher', bucketed);
    expect(alone.stdout).toContain(`voucher ${bucketed}: NOT checked: Redis's layout record sells it from 2 buckets, MySQL's row from 3`);
    expect(alone.stdout).toMatch(/reconcile: no drift in the 0 checked; 1 skipped \(not checked\)\n$/);
    expect(alone.code).toBe(4);
    const json = await run('--voucher', bucketed, '--json', '--repair');
    expect(JSON.parse(json.stdout)).toEqual({
      vouchers: 1,
      drifted: [],
      repaired: 0,
      skipped: [],
      unchecked: [{ voucherId: bucketed, reason: expect.stringContaining("Redis's layout record sells it from 2 buckets") as string }],
    });
    expect(json.code).toBe(4);
    expect(await env.redis.hget(layout, 'buckets')).toBe('2');

    const both = await run('--voucher', bucketed, '--voucher', single);
    expect(both.stdout).toMatch(/reconcile: 1 drifted, 0 repaired; 1 skipped \(not checked\)\n$/);
    expect(both.code).toBe(1);

    await env.redis.hset(layout, 'buckets', 3);
    const repaired = await run('--voucher', bucketed, '--voucher', single, '--repair');
    expect(repaired.stdout).toMatch(/reconcile: 1 drifted, 1 repaired\n$/);
    expect(repaired.code).toBe(0);
  }, 60_000);

  it('lists the exit codes in its help', async () => {
    const help = await run('--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/4\s+some vouchers were not checked/);
  });
});
