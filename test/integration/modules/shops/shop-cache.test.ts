import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDemoData } from '../../../../src/infra/seed/load-demo-data.js';
import { shopCacheKey } from '../../../../src/modules/shops/keys.js';
import { createTestEnv, sessionOf, type TestEnv } from '../../../support/test-env.js';
import { CountingShopRepository, getMany, metricSum, startApps } from './support.js';

/**
 * GET /api/shop/{id} through 4 app instances on one Redis and one MariaDB, counting the
 * database loads at the cache's loader (the repository).
 */
const REBUILDS = 'cache_requests_total{cache="shop",result="rebuild"}';

describe.each(['mutex', 'logical'] as const)('shop cache, %s strategy', (strategy) => {
  let env: TestEnv;
  let repo: CountingShopRepository;
  let instances: Awaited<ReturnType<typeof startApps>>;
  let admin: { authorization: string };

  beforeAll(async () => {
    env = await createTestEnv({
      SHOP_CACHE_STRATEGY: strategy,
      // Short enough to watch entries expire, long enough that a burst of hundreds of requests ends
      // within one TTL on a busy 2-core machine (with 1 s, a slow burst outlived its entry and loaded twice).
      SHOP_CACHE_TTL_SECONDS: '3',
      CACHE_TTL_JITTER_PERCENT: '0',
      CACHE_NULL_TTL_SECONDS: '3',
      // The null markers on their own (the Bloom filter, on by default, is tested below).
      SHOP_BLOOM: 'false',
    });
    await loadDemoData(env.db);
    admin = await sessionOf(env, '1', 'admin');
    repo = new CountingShopRepository(env.db);
    instances = await startApps(env, 4, repo);
  });

  afterAll(async () => {
    await instances?.close();
    await env?.cleanup();
  });

  it('500 concurrent requests for a cold shop cause exactly one database load', async () => {
    repo.loads = 0;
    repo.delayMs = 100; // everybody arrives while the one load runs
    try {
      const responses = await getMany(instances.apps, '/api/shop/1', 500);
      expect(responses.every((response) => response.statusCode === 200)).toBe(true);
      expect(new Set(responses.map((response) => response.body)).size).toBe(1);
      expect(responses[0]!.json().data).toMatchObject({ id: '1', typeId: '1', name: expect.stringContaining('103茶餐厅') });
      expect(repo.loads).toBe(1);
      expect(await metricSum(instances.apps, REBUILDS)).toBe(1);
    } finally {
      repo.delayMs = 0;
    }
    // Under logical expiry too, a shop nobody pre-warmed is loaded, not reported missing.
    const stored = JSON.parse((await env.redis.get(shopCacheKey('1')))!);
    expect(stored.data.id).toBe('1');
    if (strategy === 'logical') {
      expect(stored.expireAt).toEqual(expect.any(Number));
      expect(await env.redis.pttl(shopCacheKey('1'))).toBe(-1);
    } else {
      expect(await env.redis.pttl(shopCacheKey('1'))).toBeGreaterThan(0);
    }
  });

  it('100 requests for a missing id cause one database load per null-marker window', async () => {
    repo.loads = 0;
    const first = await getMany(instances.apps, '/api/shop/999999', 100);
    expect(first.every((response) => response.statusCode === 404)).toBe(true);
    expect(first[0]!.json()).toEqual({ success: false, errorMsg: 'Shop 999999 not found' });
    expect(repo.loads).toBe(1);
    await getMany(instances.apps, '/api/shop/999999', 100);
    expect(repo.loads).toBe(1);
    // Wait out what is left of the marker's CACHE_NULL_TTL_SECONDS=3 (the instances keep it in memory
    // no longer than its PTTL), plus a little for the reply that carried the PTTL.
    const markerMs = await env.redis.pttl(shopCacheKey('999999'));
    expect(markerMs).toBeGreaterThan(0);
    expect(markerMs).toBeLessThanOrEqual(3_000);
    await sleep(markerMs + 250);
    await getMany(instances.apps, '/api/shop/999999', 100);
    expect(repo.loads).toBe(2);
  });

  it('an update is visible on the next read, on every instance', async () => {
    const [a, b, c, d] = instances.apps;
    await getMany(instances.apps, '/api/shop/2', 8); // cached everywhere
    const put = await a!.inject({ method: 'PUT', url: '/api/shop', headers: admin, payload: { id: '2', name: '改名后的店', avgPrice: 88 } });
    expect(put.statusCode).toBe(200);
    for (const app of [b, c, d, a]) {
      expect((await app!.inject({ url: '/api/shop/2' })).json().data).toMatchObject({ id: '2', name: '改名后的店', avgPrice: 88 });
    }
    expect(JSON.parse((await env.redis.get(shopCacheKey('2')))!).data.name).toBe('改名后的店');
  });

  if (strategy === 'logical') {
    it('serves the stale shop while exactly one instance rebuilds it, then the new one', async () => {
      await getMany(instances.apps, '/api/shop/3', 4);
      // Changed behind the app's back (no invalidation): only the logical expiry brings it in.
      await env.db.updateTable('tb_shop').set({ name: 'new name' }).where('id', '=', '3').execute();
      const oldName = (await instances.apps[0]!.inject({ url: '/api/shop/3' })).json().data.name;
      expect(oldName).not.toBe('new name');
      const { expireAt } = JSON.parse((await env.redis.get(shopCacheKey('3')))!) as { expireAt: number };
      await sleep(Math.max(0, expireAt - Date.now()) + 50); // SHOP_CACHE_TTL_SECONDS=3: logically expired

      repo.loads = 0;
      repo.close(); // the rebuild hangs until we open the gate
      try {
        // All 500 answered (with the stale shop) while the one rebuild is held at the gate: none waited for it.
        const during = await getMany(instances.apps, '/api/shop/3', 500);
        expect(during.every((response) => response.statusCode === 200 && response.json().data.name === oldName)).toBe(true);
        await expect.poll(() => repo.loads).toBe(1); // the rebuild, started in the background
      } finally {
        repo.open();
      }
      let reads = 0;
      await expect.poll(async () => (await instances.apps[reads++ % 4]!.inject({ url: '/api/shop/3' })).json().data.name, { interval: 25 }).toBe('new name');
      expect(repo.loads).toBe(1);
      expect(await metricSum(instances.apps, 'cache_requests_total{cache="shop",result="stale"}')).toBeGreaterThanOrEqual(500);
    });
  }
});

describe('shop cache with the Bloom filter (SHOP_BLOOM=true)', () => {
  let env: TestEnv;
  let repo: CountingShopRepository;
  let instances: Awaited<ReturnType<typeof startApps>>;
  let admin: { authorization: string };

  beforeAll(async () => {
    env = await createTestEnv({ SHOP_BLOOM: 'true', SHOP_BLOOM_EXPECTED_ITEMS: '10000' });
    await loadDemoData(env.db);
    admin = await sessionOf(env, '1', 'admin');
    repo = new CountingShopRepository(env.db);
    instances = await startApps(env, 2, repo); // the first start builds the filter from tb_shop
  });

  afterAll(async () => {
    await instances?.close();
    await env?.cleanup();
  });

  it('rejects unknown ids with no database load and no cache entry', async () => {
    repo.loads = 0;
    const ids = Array.from({ length: 100 }, (_, i) => String(1_000_000 + i * 7919));
    const responses = await Promise.all(ids.map((id, i) => instances.apps[i % 2]!.inject({ url: `/api/shop/${id}` })));
    expect(responses.every((response) => response.statusCode === 404)).toBe(true);
    const rejected = await metricSum(instances.apps, 'cache_requests_total{cache="shop",result="bloom_reject"}');
    // p = 1 %: a false positive is possible; it costs one load (then a null marker), never a wrong answer.
    expect(rejected).toBeGreaterThanOrEqual(97);
    expect(repo.loads).toBe(100 - rejected);
    // Rejected ids leave nothing in Redis; a false positive leaves its null marker.
    expect(await env.redis.exists(...ids.map(shopCacheKey))).toBe(100 - rejected);
  });

  it('never rejects a real shop: all 60 demo shops and one created now', async () => {
    for (let id = 1; id <= 60; id += 1) {
      expect((await instances.apps[id % 2]!.inject({ url: `/api/shop/${id}` })).statusCode).toBe(200);
    }
    const body = { name: '新开的店', typeId: '1', address: '台州路1号', x: 120.15, y: 30.33 };
    const created = await instances.apps[0]!.inject({ method: 'POST', url: '/api/shop', headers: admin, payload: body });
    expect(created.statusCode).toBe(200);
    const id = created.json().data as string;
    const read = await instances.apps[1]!.inject({ url: `/api/shop/${id}` });
    expect(read.statusCode).toBe(200);
    expect(read.json().data).toMatchObject({ id, name: '新开的店' });
  });
});
