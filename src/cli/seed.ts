import { redactUrl } from '../infra/migrate.js';
import { loadDemoData } from '../infra/seed/load-demo-data.js';
import { closeAll, openDb } from './connections.js';
import { runCli } from './run-cli.js';

/** `npm run seed`: loads the demo data (idempotent: a second run inserts nothing). */
await runCli('seed', async (config) => {
  const db = await openDb(config, 1);
  try {
    const report = await loadDemoData(db);
    const added = Object.entries(report)
      .map(([table, count]) => `${count as number} ${table}`)
      .join(', ');
    console.log(`seed: ${redactUrl(config.mysqlUrl)} new rows: ${added}`);
    // An app that already ran on this Redis built its shop id Bloom filter (SHOP_BLOOM, on by
    // default) and GEO sets without these shops: until they are rebuilt, the new shops answer 404.
    if (report.shops > 0) console.log('seed: new shops were written to MySQL directly: run `npm run shop:index` if an app has run on this Redis before');
  } finally {
    await closeAll(undefined, db);
  }
});
