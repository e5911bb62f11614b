import { loadConfig } from '../infra/config.js';
import { createDb } from '../infra/db.js';
import { redactUrl } from '../infra/migrate.js';
import { loadDemoData } from '../infra/seed/load-demo-data.js';
import { runCli } from './run-cli.js';

/** `npm run seed`: loads the demo data (idempotent: a second run inserts nothing). */
await runCli(async () => {
  const config = loadConfig();
  const db = createDb({ mysqlUrl: config.mysqlUrl, poolSize: 1 });
  try {
    const report = await loadDemoData(db);
    const added = Object.entries(report)
      .map(([table, count]) => `${count as number} ${table}`)
      .join(', ');
    console.log(`seed: ${redactUrl(config.mysqlUrl)} new rows: ${added}`);
  } finally {
    await db.destroy();
  }
});
