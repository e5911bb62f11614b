import { Migrator } from 'kysely';
import { createConnection } from 'mysql2/promise';
import { databaseName, type Db } from './db.js';
import { migrationProvider } from './migrations/index.js';

/** Creates the database named in the URL if it does not exist yet (utf8mb4). */
export async function ensureDatabase(mysqlUrl: string): Promise<void> {
  const name = databaseName(mysqlUrl);
  if (name === undefined) throw new Error(`MYSQL_URL names no database: ${redactUrl(mysqlUrl)}`);
  const serverUrl = new URL(mysqlUrl);
  serverUrl.pathname = '/';
  const connection = await createConnection(serverUrl.toString());
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

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}
