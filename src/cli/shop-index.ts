import type { Db } from '../infra/db.js';
import { redactUrl } from '../infra/migrate.js';
import type { RedisClient } from '../infra/redis.js';
import { BloomFilter } from '../lib/cache/index.js';
import { LockClient } from '../lib/lock/index.js';
import { ShopGeoIndex, ShopRepository } from '../modules/shops/index.js';
import { closeAll, openDb, openRedis } from './connections.js';
import { runCli } from './run-cli.js';

/**
 * Rebuilds the shop indexes in Redis from tb_shop (idempotent; safe while the app runs):
 *   `npm run geo:load`       GEO sets shop:geo:{typeId} (adds/moves every shop, prunes the rest)
 *   `npm run bloom:rebuild`  the shop id Bloom filter bloom:{shop} (built aside, then swapped in)
 *   `npm run shop:index`     both
 */
const USAGE = 'usage: shop-index [geo|bloom]... (default: both)';

await runCli('shop-index', async (config) => {
  const targets = new Set(process.argv.slice(2));
  const unknown = [...targets].filter((target) => target !== 'geo' && target !== 'bloom');
  if (unknown.length > 0) {
    console.error(`shop-index: unknown index ${JSON.stringify(unknown[0])}; ${USAGE}`);
    process.exitCode = 2;
    return;
  }
  if (targets.size === 0) ['geo', 'bloom'].forEach((target) => targets.add(target));

  let db: Db | undefined;
  let redis: RedisClient | undefined;
  let locks: LockClient | undefined;
  try {
    db = await openDb(config, 2);
    redis = await openRedis(config);
    locks = new LockClient(redis);
    const shops = new ShopRepository(db);
    const where = redactUrl(config.mysqlUrl);
    if (targets.has('geo')) {
      const report = await new ShopGeoIndex(redis, shops).loadAll();
      console.log(
        `geo:load: ${where} ${report.shops} shops in ${report.types} types, ${report.removed} stale members removed, ${report.invalid} shops with coordinates Redis GEO rejects`,
      );
    }
    if (targets.has('bloom')) {
      const bloom = new BloomFilter(redis, {
        name: 'shop',
        expectedItems: config.shop.bloomExpectedItems,
        falsePositiveRate: config.shop.bloomFalsePositiveRate,
        locks,
      });
      const count = await bloom.rebuild(() => shops.idBatches());
      console.log(
        `bloom:rebuild: ${where} ${count} shop ids in ${bloom.bits} bits, ${bloom.hashes} hashes${config.shop.bloom ? '' : ' (SHOP_BLOOM=false: kept in step, not consulted)'}`,
      );
    }
  } finally {
    await locks?.close();
    await closeAll(redis, db);
  }
});
