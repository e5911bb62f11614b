import { loadConfig } from '../infra/config.js';
import { createDb } from '../infra/db.js';
import { ensureDatabase, migrateToLatest, redactUrl } from '../infra/migrate.js';
import { runCli } from './run-cli.js';

/** `npm run migrate`: creates the database if needed and applies pending migrations. */
await runCli(async () => {
  const config = loadConfig();
  await ensureDatabase(config.mysqlUrl);
  const db = createDb({ mysqlUrl: config.mysqlUrl, poolSize: 1 });
  try {
    const applied = await migrateToLatest(db);
    const what = applied.length > 0 ? `applied ${applied.join(', ')}` : 'already up to date';
    console.log(`migrate: ${redactUrl(config.mysqlUrl)} ${what}`);
  } finally {
    await db.destroy();
  }
});
