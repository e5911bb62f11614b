import { Migrator } from 'kysely';
import { createConnection } from 'mysql2/promise';
import { databaseName, type Db } from './db.js';
import { migrationProvider } from './migrations/index.js';
import { redactUrl } from './redact.js';
import { DependencyUnavailable } from './transient-errors.js';

/**
 * Creates the database named in the URL if it does not exist yet (utf8mb4). Connecting fails
 * after `connectTimeoutMs` (mysql2's default: 10 s) with a DependencyUnavailable naming MySQL.
 */
export async function ensureDatabase(mysqlUrl: string, connectTimeoutMs?: number): Promise<void> {
  const name = databaseName(mysqlUrl);
  if (name === undefined) throw new Error(`MYSQL_URL names no database: ${redactUrl(mysqlUrl)}`);
  const serverUrl = new URL(mysqlUrl);
  serverUrl.pathname = '/';
  let connection;
  try {
    connection = await createConnection({ uri: serverUrl.toString(), ...(connectTimeoutMs === undefined ? {} : { connectTimeout: connectTimeoutMs }) });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if ((error as { sqlState?: unknown }).sqlState !== undefined) throw error; // MySQL answered (bad password...)
    throw new DependencyUnavailable('MySQL', redactUrl(mysqlUrl), code === 'ETIMEDOUT', error);
  }
  try {
    await connection.query(`CREATE DATABASE IF NOT EXISTS \`${name.replace(/`/g, '``')}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  } finally {
    await connection.end();
  }
}

/**
 * Applies every pending migration. Kysely holds a database lock meanwhile, so app instances
 * that start together do not race each other.
 */
export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results = [] } = await migrator.migrateToLatest();
  const failed = results.find((result) => result.status === 'Error');
  if (error !== undefined || failed !== undefined) {
    const name = failed ? ` (${failed.migrationName})` : '';
    throw new Error(`Migration failed${name}: ${String(error)}`, { cause: error });
  }
  return results.map((result) => result.migrationName);
}

// Kept importable from here (the commands did); it lives apart so that connections need not load the migrations.
export { redactUrl } from './redact.js';
