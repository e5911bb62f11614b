import { CompiledQuery, Kysely, MysqlDialect, type MysqlPool, type MysqlPoolConnection, type MysqlQueryResult } from 'kysely';
import { createPool, type Pool, type PoolConnection } from 'mysql2';
import { redactUrl } from './redact.js';
import type { Database } from './schema.js';
import { DependencyUnavailable, isTransient } from './transient-errors.js';

export type Db = Kysely<Database>;

export interface DbOptions {
  mysqlUrl: string;
  poolSize?: number;
  /** Bounds (config.deadlines); without them a silent server hangs queries forever. */
  timeouts?: DbTimeouts;
}

export interface DbTimeouts {
  /** Per query, and the longest wait for a pooled connection. */
  queryMs: number;
  /** TCP connect and handshake of a new connection. */
  connectMs: number;
}

/**
 * Kysely over a mysql2 pool.
 *
 * BIGINT ids come back as decimal strings (`supportBigNumbers` + `bigNumberStrings`): a
 * JavaScript number silently loses precision above 2^53, and the seckill order ids are 63-bit.
 * Times are stored and read as UTC so instances in different time zones agree.
 */
export function createDb({ mysqlUrl, poolSize = 10, timeouts }: DbOptions): Db {
  const pool = createMysqlPool(mysqlUrl, poolSize, timeouts?.connectMs);
  return new Kysely<Database>({
    dialect: new MysqlDialect({
      pool: timeouts ? new BoundedPool(pool, timeouts.queryMs, redactUrl(mysqlUrl)) : pool,
      onCreateConnection: async (connection) => {
        // CURRENT_TIMESTAMP defaults follow the session zone: pin it to UTC.
        await connection.executeQuery(CompiledQuery.raw("SET time_zone = '+00:00'"));
      },
    }),
  });
}

function createMysqlPool(mysqlUrl: string, poolSize: number, connectTimeoutMs?: number): Pool {
  return createPool({
    uri: mysqlUrl,
    connectionLimit: poolSize,
    ...(connectTimeoutMs === undefined ? {} : { connectTimeout: connectTimeoutMs }),
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

/**
 * The pool as Kysely sees it, with every wait bounded: mysql2 queues a getConnection() forever
 * when the pool is exhausted (and a query forever on a silent server). Errors that say MySQL is
 * unreachable or silent become DependencyUnavailable (a 503 naming MySQL); SQL errors pass as they are.
 */
class BoundedPool implements MysqlPool {
  /**
   * One wrapper per physical connection, handed out again on every acquire: Kysely knows a
   * connection by the identity of the object the pool gives it and runs onCreateConnection
   * (`SET time_zone`) for each one it has not seen, so a new wrapper per acquire would cost a SET
   * per query. Weak: a destroyed connection leaves the pool and its wrapper goes with it.
   */
  private readonly wrappers = new WeakMap<PoolConnection, MysqlPoolConnection>();

  constructor(
    private readonly pool: Pool,
    private readonly timeoutMs: number,
    private readonly address: string,
  ) {}

  getConnection(callback: (error: unknown, connection: MysqlPoolConnection) => void): void {
    let settled = false;
    const timer = setTimeout(() => {
      settled = true;
      callback(this.unavailable(new Error(`no pooled connection within ${this.timeoutMs} ms`), true), undefined as never);
    }, this.timeoutMs);
    this.pool.getConnection((error, connection) => {
      if (settled) {
        // Too late for its caller: back to the pool for the next one.
        if (!error) connection.release();
        return;
      }
      settled = true;
      clearTimeout(timer);
      if (error) callback(this.translate(error), undefined as never);
      else callback(null, this.wrapperOf(connection));
    });
  }

  end(callback: (error: unknown) => void): void {
    this.pool.end(callback);
  }

  private wrapperOf(connection: PoolConnection): MysqlPoolConnection {
    let wrapper = this.wrappers.get(connection);
    if (!wrapper) {
      wrapper = this.bounded(connection);
      this.wrappers.set(connection, wrapper);
    }
    return wrapper;
  }

  private bounded(connection: PoolConnection): MysqlPoolConnection {
    const query = (sql: string, values: unknown[], callback?: (error: unknown, result: MysqlQueryResult) => void): unknown => {
      if (!callback) return connection.query({ sql, values, timeout: this.timeoutMs }); // a stream: Kysely's streamQuery
      return connection.query({ sql, values, timeout: this.timeoutMs }, (error, result) => {
        if (error && error.code === 'PROTOCOL_SEQUENCE_TIMEOUT') {
          // The query may still be running or its answer may still come: the connection is not
          // reusable. Destroyed, it leaves the pool (Kysely's release() is then a no-op) and the
          // pool opens a fresh one for the next caller.
          connection.destroy();
        }
        callback(error ? this.translate(error) : null, result as MysqlQueryResult);
      });
    };
    return { query, release: () => connection.release() } as MysqlPoolConnection;
  }

  private translate(error: Error & { code?: string; sqlState?: string; fatal?: boolean }): Error {
    // A SQL error (duplicate key, deadlock...) is MySQL answering: leave it to the caller.
    if (error.sqlState !== undefined || !(isTransient(error) || error.fatal === true)) return error;
    return this.unavailable(error, error.code === 'PROTOCOL_SEQUENCE_TIMEOUT' || error.code === 'ETIMEDOUT');
  }

  private unavailable(cause: Error, stalled: boolean): DependencyUnavailable {
    return new DependencyUnavailable('MySQL', this.address, stalled, cause);
  }
}
