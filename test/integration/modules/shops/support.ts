import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { closeRedis, createRedis, type RedisClient } from '../../../../src/infra/redis.js';
import { ShopRepository, type ShopRow } from '../../../../src/modules/shops/shop-repository.js';
import { buildTestApp, metricsAuth, type TestEnv } from '../../../support/test-env.js';
import { Gate } from '../../../support/gate.js';

/**
 * The real MySQL repository, counting the loads of single shops (the cache's loader) at the
 * source. A load can be slowed down or held at a gate to look at the world while it runs.
 */
export class CountingShopRepository extends ShopRepository {
  loads = 0;
  delayMs = 0;
  private readonly gate = new Gate();

  override async findById(id: string): Promise<ShopRow | undefined> {
    this.loads += 1;
    const row = await super.findById(id);
    if (this.delayMs > 0) await sleep(this.delayMs);
    await this.gate.pass();
    return row;
  }

  close(): void {
    this.gate.close();
  }

  open(): void {
    this.gate.open();
  }
}

/** N app instances on one database and one Redis, each with its own Redis connection (and so its own locks). */
export async function startApps(env: TestEnv, count: number, shopRepository: ShopRepository) {
  const apps: FastifyInstance[] = [];
  const connections: RedisClient[] = [];
  for (let i = 0; i < count; i += 1) {
    const redis = createRedis(env.config);
    connections.push(redis);
    apps.push((await buildTestApp({ ...env, redis }, undefined, { shopRepository })).app);
  }
  return {
    apps,
    async close() {
      for (const app of apps) await app.close();
      for (const redis of connections) await closeRedis(redis);
    },
  };
}

/** `count` GETs of `url` spread round-robin over the apps, all at once. */
export function getMany(apps: FastifyInstance[], url: string, count: number) {
  return Promise.all(Array.from({ length: count }, (_, i) => apps[i % apps.length]!.inject({ url })));
}

/** A counter of an app's /metrics, e.g. cache_requests_total{cache="shop",result="rebuild"}. */
export async function metric(app: FastifyInstance, series: string): Promise<number> {
  const text = (await app.inject({ url: '/metrics', headers: metricsAuth })).body;
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

export async function metricSum(apps: FastifyInstance[], series: string): Promise<number> {
  let sum = 0;
  for (const app of apps) sum += await metric(app, series);
  return sum;
}
