import { CompiledQuery, Kysely, MysqlDialect } from 'kysely';
import { createPool, type Pool } from 'mysql2';
import type { Database } from './schema.js';

export type Db = Kysely<Database>;

export interface DbOptions {
  mysqlUrl: string;
  poolSize?: number;
}

/**
 * Kysely over a mysql2 pool.
 *
 * BIGINT ids come back as decimal strings (`supportBigNumbers` + `bigNumberStrings`): a
 * JavaScript number silently loses precision above 2^53, and the seckill order ids are 63-bit.
 * Times are stored and read as UTC so instances in different time zones agree.
 */
export function createDb({ mysqlUrl, poolSize = 10 }: DbOptions): Db {
  const pool = createMysqlPool(mysqlUrl, poolSize);
  return new Kysely<Database>({
    dialect: new MysqlDialect({
      pool,
      onCreateConnection: async (connection) => {
        // CURRENT_TIMESTAMP defaults follow the session zone: pin it to UTC.
        await connection.executeQuery(CompiledQuery.raw("SET time_zone = '+00:00'"));
      },
    }),
  });
}

function createMysqlPool(mysqlUrl: string, poolSize = 10): Pool {
  return createPool({
    uri: mysqlUrl,
    connectionLimit: poolSize,
    supportBigNumbers: true,
    bigNumberStrings: true,
    timezone: 'Z',
    charset: 'utf8mb4_unicode_ci',
    dateStrings: false,
  });
}

/** The database name in a mysql:// URL (the path), or undefined for a server-only URL. */
export function databaseName(mysqlUrl: string): string | undefined {
  const name = decodeURIComponent(new URL(mysqlUrl).pathname.replace(/^\//, ''));
  return name === '' ? undefined : name;
}
