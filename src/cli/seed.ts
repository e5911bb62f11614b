import { redactUrl } from '../infra/migrate.js';
import { loadDemoContent } from './demo-content.js';
import { loadDemoData } from '../infra/seed/load-demo-data.js';
import { demoSaleStates, demoVouchers } from '../infra/seed/demo-data.js';
import { voucherListCacheKey } from '../modules/seckill/index.js';
import { closeAll, openDb, openRedis } from './connections.js';
import { runCli } from './run-cli.js';

/**
 * `npm run seed`: loads the demo data, then the demo blogs, follows and likes with their pictures
 * (written to UPLOAD_DIR). Idempotent: a second run inserts nothing.
 */
await runCli('seed', async (config) => {
  const db = await openDb(config, 1);
  const redis = await openRedis(config).catch(async (error: unknown) => {
    await closeAll(undefined, db);
    throw error;
  });
  try {
    const report = { ...(await loadDemoData(db)), ...(await loadDemoContent(db, redis, config.upload.dir)) };
    const added = Object.entries(report)
      .map(([table, count]) => `${count} ${table}`)
      .join(', ');
    console.log(`seed: ${redactUrl(config.mysqlUrl)} new rows: ${added}`);
    // An app that already ran on this Redis may hold these shops' voucher lists (cache:voucher-list,
    // invalidated only by the app's own writes): dropped, so every instance lists the new vouchers.
    if (report.vouchers + report.saleVouchers > 0) {
      const now = new Date();
      const shopIds = new Set([...demoVouchers(now).vouchers, ...demoSaleStates(now).vouchers].map((voucher) => voucher.shop_id));
      for (const shopId of shopIds) await redis.del(voucherListCacheKey(shopId));
    }
    // An app that already ran on this Redis built its shop id Bloom filter (SHOP_BLOOM, on by
    // default) and GEO sets without these shops: until they are rebuilt, the new shops answer 404.
    if (report.shops + report.branches > 0)
      console.log('seed: new shops were written to MySQL directly: run `npm run shop:index` if an app has run on this Redis before');
  } finally {
    await closeAll(redis, db);
  }
});
