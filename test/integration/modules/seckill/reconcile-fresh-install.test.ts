import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcileSeckill } from '../../../../src/modules/seckill/admin/reconcile.js';
import { SaleKeys } from '../../../../src/modules/seckill/keys.js';
import { buildSale, type Sale } from '../../../../src/modules/seckill/sale/sale.js';
import { DEMO_SECKILL_STATES, demoSaleStates } from '../../../../src/infra/seed/demo-data.js';
import { loadDemoData } from '../../../../src/infra/seed/load-demo-data.js';
import { buildTestApp, createTestEnv, type TestEnv } from '../../../support/test-env.js';
import { deleteKeys } from '../../../support/redis.js';
import { HOUR, insertSeckillVoucher } from '../../../support/seckill.js';

let env: TestEnv;
let app: FastifyInstance | undefined;
let sale: Sale;

beforeAll(async () => {
  env = await createTestEnv();
  sale = buildSale(env.redis, new SaleKeys(env.config.seckill.streamShards));
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

const reconcileAll = () => reconcileSeckill({ db: env.db, sale }, { repair: false });

/** The seed's sales (`npm run seed`): open, upcoming, sold out and ended yesterday. */
async function seed(): Promise<void> {
  const now = new Date();
  await loadDemoData(env.db, now);
  const { vouchers, seckill } = demoSaleStates(now);
  await env.db.insertInto('tb_voucher').values(vouchers).execute();
  await env.db.insertInto('tb_seckill_voucher').values(seckill).execute();
}

describe('reconcile on a clean deploy', () => {
  it('finds no drift after the seed and the start, nor after Redis lost everything, yet reports a sale Redis holds wrongly', async () => {
    await seed();
    app = (await buildTestApp(env)).app; // the start publishes every sale not yet ended
    const ended = DEMO_SECKILL_STATES.ended;
    expect(await sale.reads.read(ended)).toBeNull();
    const fresh = await reconcileAll();
    expect(fresh.vouchers).toBe(4);
    expect(fresh.drifted).toEqual([]);

    // Redis restarted empty under a running instance: nothing sold yet, so the next order publishes exactly what MySQL holds.
    await deleteKeys(env.keyPrefix);
    expect((await reconcileAll()).drifted).toEqual([]);

    // Real drift is still drift: an ended sale's buyer marks without its hash, or its hash with a wrong stock.
    await env.redis.hset(sale.keys.voucher(ended).buyers, '77', 1);
    expect((await reconcileSeckill({ db: env.db, sale }, { repair: false, voucherIds: [ended] })).drifted).toEqual([
      { voucherId: ended, mysqlStock: 20, redisStock: null, expectedStock: 20, missingBuyers: [], extraBuyers: ['77'] },
    ]);
    await env.redis.del(sale.keys.voucher(ended).buyers);
    const endedAnHourAgo = await insertSeckillVoucher(env, { stock: 3, begin: new Date(Date.now() - 2 * HOUR), end: new Date(Date.now() - HOUR) });
    await sale.publisher.publish({ voucherId: endedAnHourAgo, stock: 5, begin: new Date(Date.now() - 2 * HOUR), end: new Date(Date.now() - HOUR) });
    expect((await reconcileAll()).drifted).toEqual([
      { voucherId: endedAnHourAgo, mysqlStock: 3, redisStock: 5, expectedStock: 3, missingBuyers: [], extraBuyers: [] },
    ]);
  });
});
