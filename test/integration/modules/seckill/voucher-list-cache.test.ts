import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../../../src/infra/config.js';
import { closeRedis, createRedis, type RedisClient } from '../../../../src/infra/redis.js';
import { voucherListCacheKey } from '../../../../src/modules/seckill/keys.js';
import { VoucherRepository, type VoucherWithSeckill } from '../../../../src/modules/seckill/record/voucher-repository.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, sessionOf, type TestEnv } from '../../../support/test-env.js';
import { buy, HOUR } from '../../../support/seckill.js';
import { metric } from '../shops/support.js';

/**
 * `GET /api/voucher/list/{shopId}` on two app instances (one Redis, one MariaDB), each with its
 * near cache: the list (`cache:voucher-list:{shopId}`) and each sale's stock (its Redis hash) are
 * served from process memory, and a new voucher, a sale control or an order on one instance is
 * listed by the other as soon as Redis pushes the invalidation: asserted within a second (typically
 * a few ms, printed), where the near cache's own life is 5 minutes (NEAR_CACHE_TTL_MS), so only the
 * push can do it (a bound of 50 ms is not what a loaded 2-core machine guarantees).
 */

/** The real repository, counting the list's MySQL reads (the cache's loader). */
class CountingVoucherRepository extends VoucherRepository {
  listLoads = 0;

  override async listByShop(shopId: string): Promise<VoucherWithSeckill[]> {
    this.listLoads += 1;
    return super.listByShop(shopId);
  }
}

interface Instance {
  app: FastifyInstance;
  repository: CountingVoucherRepository;
  redis: RedisClient;
}

let env: TestEnv;
const instances: Instance[] = [];
let admin: { authorization: string };
let buyers: Array<{ id: string; token: string }>;

/** An app instance with its own Redis connection (and so its own near cache and locks) and its own counting repository. */
async function startInstance(config: Config = env.config): Promise<Instance> {
  const redis = createRedis(config);
  const repository = new CountingVoucherRepository(env.db);
  const { app } = await buildTestApp({ ...env, config, redis }, undefined, { voucherRepository: repository });
  const instance = { app, repository, redis };
  instances.push(instance);
  return instance;
}

beforeAll(async () => {
  env = await createTestEnv();
  await env.db
    .insertInto('tb_shop')
    .values([
      { id: '7', name: '103茶餐厅', type_id: '1', address: '台州路1号', x: 120.15, y: 30.33 },
      { id: '8', name: '蔡馬洪涛烤肉', type_id: '1', address: '拱墅区', x: 120.15, y: 30.33 },
      { id: '9', name: '新白鹿餐厅', type_id: '1', address: '运河上街', x: 120.15, y: 30.33 },
    ])
    .execute();
  admin = await sessionOf(env, '999001', 'admin');
  buyers = await createUsersWithSessions(env, 4);
});

afterAll(async () => {
  for (const { app } of instances) await app.close();
  for (const { redis } of instances) await closeRedis(redis);
  await env?.cleanup();
});

type Listed = { id: string; title: string; stock?: number; beginTime?: string; endTime?: string; limitPerUser?: number; purchaseGate?: string };

async function list(app: FastifyInstance, shopId: string): Promise<Listed[]> {
  const response = await app.inject({ url: `/api/voucher/list/${shopId}` });
  expect(response.statusCode, response.body).toBe(200);
  return response.json<{ data: Listed[] }>().data;
}

const listed = async (app: FastifyInstance, shopId: string, voucherId: string) => (await list(app, shopId)).find((voucher) => voucher.id === voucherId);

function createSeckill(app: FastifyInstance, shopId: string, title: string, stock: number) {
  const payload = {
    shopId,
    title,
    payValue: 100,
    actualValue: 200,
    stock,
    beginTime: new Date(Date.now() - HOUR).toISOString(),
    endTime: new Date(Date.now() + HOUR).toISOString(),
  };
  return app.inject({ method: 'POST', url: '/api/voucher/seckill', headers: admin, payload });
}

async function createdId(response: Awaited<ReturnType<typeof createSeckill>>): Promise<string> {
  expect(response.statusCode, response.body).toBe(200);
  return response.json<{ data: string }>().data;
}

const patch = (app: FastifyInstance, voucherId: string, payload: object) =>
  app.inject({ method: 'PATCH', url: `/api/voucher/seckill/${voucherId}`, headers: admin, payload });

/** A change made on one instance is seen by the other within this: pushed, not aged out of memory. */
const PUSHED_MS = 1_000;

/** Ms until `check` holds, trying every millisecond (fails after 5 s). */
async function msUntil(check: () => Promise<boolean>): Promise<number> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > 5_000) throw new Error('not within 5 s');
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  return performance.now() - started;
}

const near = (app: FastifyInstance, cache: 'voucher-list' | 'voucher-sale', event: 'hit' | 'miss' | 'invalidation') =>
  metric(app, `near_cache_events_total{cache="${cache}",event="${event}"}`);

/** Reads the list until it is served from memory: after a load (cold), a read through the tracked connection (kept), then hits. */
async function warm(app: FastifyInstance, shopId: string): Promise<void> {
  for (let i = 0; i < 3; i++) await list(app, shopId);
}

describe('voucher list through the near cache, two instances', () => {
  let a: Instance;
  let b: Instance;

  beforeAll(async () => {
    a = await startInstance();
    b = await startInstance();
  });

  it('repeated reads of a quiet sale are near cache hits: no MySQL read, no Redis read; the answer is unchanged', async () => {
    const normal = await a.app.inject({
      method: 'POST',
      url: '/api/voucher',
      headers: admin,
      payload: { shopId: '7', title: '50元代金券', payValue: 4750, actualValue: 5000 },
    });
    expect(normal.statusCode, normal.body).toBe(200);
    const voucherId = await createdId(await createSeckill(a.app, '7', '秒杀券', 20));
    await warm(b.app, '7');
    const first = await list(b.app, '7');
    expect(first.map((voucher) => voucher.id)).toEqual([normal.json().data, voucherId]);
    expect(first[1]).toMatchObject({ stock: 20, limitPerUser: 1, purchaseGate: 'off' });

    const loads = b.repository.listLoads;
    const before = {
      listHits: await near(b.app, 'voucher-list', 'hit'),
      listMisses: await near(b.app, 'voucher-list', 'miss'),
      saleHits: await near(b.app, 'voucher-sale', 'hit'),
      saleMisses: await near(b.app, 'voucher-sale', 'miss'),
    };
    for (let i = 0; i < 10; i++) expect(await list(b.app, '7')).toEqual(first);
    expect(b.repository.listLoads).toBe(loads); // no MySQL read
    // Every Redis read of the list path goes through the near cache: no miss = no Redis round trip.
    expect(await near(b.app, 'voucher-list', 'miss')).toBe(before.listMisses);
    expect(await near(b.app, 'voucher-sale', 'miss')).toBe(before.saleMisses);
    expect(await near(b.app, 'voucher-list', 'hit')).toBe(before.listHits + 10);
    expect(await near(b.app, 'voucher-sale', 'hit')).toBe(before.saleHits + 10); // one seckill voucher per read
    // Counted with the other caches: one load for the whole cluster of two instances, hits since.
    const rebuilds =
      (await metric(a.app, 'cache_requests_total{cache="voucher-list",result="rebuild"}')) +
      (await metric(b.app, 'cache_requests_total{cache="voucher-list",result="rebuild"}'));
    expect(rebuilds).toBeGreaterThanOrEqual(1);
    expect(await metric(b.app, 'cache_requests_total{cache="voucher-list",result="hit"}')).toBeGreaterThanOrEqual(10);
  });

  it('a voucher created on A is listed by B at once, though B served the list from memory', async () => {
    await createdId(await createSeckill(a.app, '8', '第一张券', 5));
    await warm(b.app, '8');
    const hits = await near(b.app, 'voucher-list', 'hit');
    const cached = await list(b.app, '8');
    expect(await near(b.app, 'voucher-list', 'hit')).toBe(hits + 1); // served from memory
    expect(cached).toHaveLength(1);

    const voucherId = await createdId(await createSeckill(a.app, '8', '第二张券', 7));
    const latency = await msUntil(async () => (await listed(b.app, '8', voucherId)) !== undefined);
    console.info(`new voucher listed by the other instance after ${latency.toFixed(1)} ms`);
    expect(latency).toBeLessThan(PUSHED_MS);
    expect(await listed(b.app, '8', voucherId)).toMatchObject({ title: '第二张券', stock: 7 });
    expect(await listed(a.app, '8', voucherId)).toMatchObject({ title: '第二张券', stock: 7 }); // the writer at once
    expect(await near(b.app, 'voucher-list', 'invalidation')).toBeGreaterThanOrEqual(1);
  });

  it('a sale control on A (window, limit per user, gate, stock top-up) is listed by B at once', async () => {
    const voucherId = await createdId(await createSeckill(a.app, '9', '调整券', 10));
    const newEnd = new Date(Math.floor((Date.now() + 3 * HOUR) / 1000) * 1000).toISOString();
    const changes: Array<[string, object, (voucher: Listed | undefined) => boolean]> = [
      ['window', { endTime: newEnd }, (voucher) => voucher?.endTime === newEnd],
      ['limit per user', { limitPerUser: 3 }, (voucher) => voucher?.limitPerUser === 3],
      ['purchase gate', { purchaseGate: 'token' }, (voucher) => voucher?.purchaseGate === 'token'],
      ['stock top-up', { stock: 25 }, (voucher) => voucher?.stock === 25],
    ];
    for (const [what, change, seen] of changes) {
      await warm(b.app, '9');
      expect(seen(await listed(b.app, '9', voucherId)), what).toBe(false);
      const misses = await near(b.app, 'voucher-list', 'miss');
      await listed(b.app, '9', voucherId);
      expect(await near(b.app, 'voucher-list', 'miss'), `${what}: B served the list from memory`).toBe(misses);

      const response = await patch(a.app, voucherId, change);
      expect(response.json(), what).toMatchObject({ success: true, data: { changed: true } });
      const latency = await msUntil(async () => seen(await listed(b.app, '9', voucherId)));
      console.info(`${what} listed by the other instance after ${latency.toFixed(1)} ms`);
      expect(latency, what).toBeLessThan(PUSHED_MS);
      expect(seen(await listed(a.app, '9', voucherId)), what).toBe(true);
    }
    // The top-up moved the live stock (Redis) and MySQL's alike.
    expect(await listed(b.app, '9', voucherId)).toMatchObject({ stock: 25, limitPerUser: 3, purchaseGate: 'token', endTime: newEnd });
  });

  it("an order's stock decrement is listed by both instances, without reloading the list from MySQL", async () => {
    const voucherId = await createdId(await createSeckill(a.app, '7', '下单券', 3));
    for (const { app } of [a, b]) await warm(app, '7');
    const loads = a.repository.listLoads + b.repository.listLoads;
    const invalidations = await near(b.app, 'voucher-sale', 'invalidation');

    expect((await buy(a.app, buyers[0]!.token, voucherId)).json()).toMatchObject({ success: true });
    const latency = await msUntil(async () => (await listed(b.app, '7', voucherId))?.stock === 2);
    console.info(`order's stock decrement listed by the other instance after ${latency.toFixed(1)} ms`);
    expect(latency).toBeLessThan(PUSHED_MS);
    expect((await listed(a.app, '7', voucherId))?.stock).toBe(2);
    expect(await near(b.app, 'voucher-sale', 'invalidation')).toBeGreaterThan(invalidations);

    expect((await buy(b.app, buyers[1]!.token, voucherId)).json()).toMatchObject({ success: true });
    await msUntil(async () => (await listed(a.app, '7', voucherId))?.stock === 1 && (await listed(b.app, '7', voucherId))?.stock === 1);
    // Orders change the sale hash only: the cached list (MySQL) was not loaded again.
    expect(a.repository.listLoads + b.repository.listLoads).toBe(loads);
  });

  it('a list Redis lost (or a hand-written row, once its key is dropped) is loaded again; an empty shop answers []', async () => {
    await warm(b.app, '8');
    await env.redis.del(voucherListCacheKey('8'));
    await msUntil(async () => (await list(b.app, '8')).length === 2);
    expect(await list(b.app, '12345')).toEqual([]);
    expect(await env.redis.get(voucherListCacheKey('12345'))).toBe(''); // the null marker (CACHE_NULL_TTL_SECONDS)
  });
});

describe('voucher list with the near cache off (NEAR_CACHE_ENABLED=false)', () => {
  let a: Instance;
  let b: Instance;

  beforeAll(async () => {
    const config = { ...env.config, nearCache: { ...env.config.nearCache, enabled: false } };
    a = await startInstance(config);
    b = await startInstance(config);
  });

  it('lists new vouchers, controls and orders at once on the other instance, from the Redis cache', async () => {
    const voucherId = await createdId(await createSeckill(a.app, '9', '直读券', 4));
    expect(await listed(b.app, '9', voucherId)).toMatchObject({ stock: 4, limitPerUser: 1 });
    const loads = b.repository.listLoads;
    for (let i = 0; i < 5; i++) expect(await listed(b.app, '9', voucherId)).toMatchObject({ stock: 4 });
    expect(b.repository.listLoads).toBe(loads); // served by cache:voucher-list, not MySQL
    expect(await near(b.app, 'voucher-list', 'hit')).toBe(0);

    expect((await patch(a.app, voucherId, { limitPerUser: 2 })).json()).toMatchObject({ success: true });
    expect(await listed(b.app, '9', voucherId)).toMatchObject({ limitPerUser: 2 });
    expect((await buy(a.app, buyers[2]!.token, voucherId)).json()).toMatchObject({ success: true });
    expect(await listed(b.app, '9', voucherId)).toMatchObject({ stock: 3 });
    const second = await createdId(await createSeckill(a.app, '9', '又一张', 1));
    expect(await listed(b.app, '9', second)).toMatchObject({ stock: 1 });
  });
});
