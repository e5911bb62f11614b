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
  } finally {
    await closeAll(undefined, db);
  }
});
