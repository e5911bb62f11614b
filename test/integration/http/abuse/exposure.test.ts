import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDemoData } from '../../../../src/infra/seed/load-demo-data.js';
import { createMetrics } from '../../../../src/infra/metrics.js';
import { loadConfig } from '../../../../src/infra/config.js';
import { shopCacheKey } from '../../../../src/modules/shops/keys.js';
import { buildTestApp, createTestEnv, metricsAuth, type TestEnv } from '../../../support/test-env.js';
import { CountingShopRepository } from '../../modules/shops/support.js';

/**
 * What the API port gives away by default (issue #17, item 10): /metrics only to a scraper with
 * METRICS_TOKEN (no route at all without one), and unknown shop ids (cache penetration) reach
 * neither MySQL nor the cache, with the defaults.
 */

let env: TestEnv;

beforeAll(async () => {
  env = await createTestEnv();
  // Before any app starts: the first start builds the shop id Bloom filter from tb_shop.
  await loadDemoData(env.db);
});

afterAll(async () => {
  await env?.cleanup();
});

describe('GET /metrics', () => {
  it('does not exist without METRICS_TOKEN (the default)', async () => {
    expect(loadConfig({}).metricsToken).toBe('');
    const { app } = await buildTestApp({ ...env, config: { ...env.config, metricsToken: '' } });
    try {
      const response = await app.inject({ url: '/metrics', headers: metricsAuth });
      expect(response.statusCode).toBe(404);
      expect(response.body).not.toContain('http_request_duration_seconds');
    } finally {
      await app.close();
    }
  });

  it('refuses a missing or wrong token with 401 before rendering anything, and serves the right one', async () => {
    const metrics = createMetrics();
    let renders = 0;
    const render = metrics.render.bind(metrics);
    metrics.render = () => {
      renders += 1;
      return render();
    };
    const { app } = await buildTestApp(env, undefined, { metrics });
    try {
      const refused = [
        {},
        { authorization: 'Bearer wrong-token-wrong-token-1234' },
        { authorization: metricsAuth.authorization.slice('Bearer '.length) }, // the token without the scheme
        { authorization: `${metricsAuth.authorization}x` },
        { authorization: 'Basic dXNlcjpwYXNz' },
      ];
      for (const headers of refused) {
        const response = await app.inject({ url: '/metrics', headers });
        expect(response.statusCode, JSON.stringify(headers)).toBe(401);
        expect(response.headers['www-authenticate']).toContain('Bearer');
        expect(response.json()).toEqual({ success: false, errorMsg: expect.any(String) });
      }
      expect(renders).toBe(0);

      const scrapes = await Promise.all(Array.from({ length: 10 }, () => app.inject({ url: '/metrics', headers: metricsAuth })));
      expect(scrapes.map((response) => response.statusCode)).toEqual(Array<number>(10).fill(200));
      expect(scrapes[0]!.body).toContain('http_request_duration_seconds');
      // Ten concurrent scrapes, one rendering (its Redis scripts run once).
      expect(renders).toBeLessThanOrEqual(2);
    } finally {
      await app.close();
    }
  });

  it('refuses a short METRICS_TOKEN at start without echoing it', () => {
    expect(() => loadConfig({ METRICS_TOKEN: 'secret' })).toThrow(/METRICS_TOKEN: expected at least 16 characters/);
    expect(() => loadConfig({ METRICS_TOKEN: 'secret' })).not.toThrow(/secret/);
  });
});

describe('cache penetration with the default configuration', () => {
  it('sends 2,000 random unknown shop ids to neither MySQL nor the cache, and every real shop still answers', async () => {
    expect(loadConfig({}).shop.bloom).toBe(true);
    const repo = new CountingShopRepository(env.db);
    const { app } = await buildTestApp(env, undefined, { shopRepository: repo });
    try {
      const ids = Array.from({ length: 2000 }, () => String(1_000 + Math.floor(Math.random() * 1e15)));
      const statuses = new Set<number>();
      for (let i = 0; i < ids.length; i += 100) {
        const batch = await Promise.all(ids.slice(i, i + 100).map((id) => app.inject({ url: `/api/shop/${id}` })));
        for (const response of batch) statuses.add(response.statusCode);
      }
      expect([...statuses]).toEqual([404]);
      // A Bloom filter sized for 1,000,000 shops holding 60 answers "maybe" almost never.
      expect(repo.loads).toBeLessThanOrEqual(5);
      expect(await env.redis.exists(...ids.map(shopCacheKey))).toBe(repo.loads);

      for (let id = 1; id <= 60; id += 1) expect((await app.inject({ url: `/api/shop/${id}` })).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });
});
