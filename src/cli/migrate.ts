import { ensureDatabase, migrateToLatest, redactUrl } from '../infra/migrate.js';
import { CLI_TIMEOUTS, closeAll, openDb } from './connections.js';
import { runCli } from './run-cli.js';

/** `npm run migrate`: creates the database if needed and applies pending migrations. */
await runCli('migrate', async (config) => {
  await ensureDatabase(config.mysqlUrl, CLI_TIMEOUTS.connectMs);
  const db = await openDb(config, 1);
  try {
    const applied = await migrateToLatest(db);
    const what = applied.length > 0 ? `applied ${applied.join(', ')}` : 'already up to date';
    console.log(`migrate: ${redactUrl(config.mysqlUrl)} ${what}`);
  } finally {
    await closeAll(undefined, db);
  }
});
