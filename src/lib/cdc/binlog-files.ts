import { createConnection } from 'mysql2/promise';
import type { BinlogPosition } from './position-store.js';

/**
 * What the server says of its binlog (SHOW BINARY LOGS, SHOW MASTER STATUS), each asked on a
 * connection of its own: the follower asks once per term, not per event.
 */
export class BinlogFiles {
  constructor(private readonly mysqlUrl: string) {}

  /** The binlog files the server still has, oldest first. */
  async list(): Promise<string[]> {
    const rows = await this.query<Array<{ Log_name: string }>>('SHOW BINARY LOGS');
    return rows.map((row) => row.Log_name);
  }

  /** Where the next transaction will be written. Throws when the server writes no binlog. */
  async current(): Promise<BinlogPosition> {
    const [row] = await this.query<Array<{ File: string; Position: number | string }>>('SHOW MASTER STATUS');
    if (row === undefined) throw new Error('the server writes no binlog (log_bin is off): the change follower cannot run');
    return { file: row.File, position: Number(row.Position) };
  }

  private async query<T>(sql: string): Promise<T> {
    const connection = await createConnection({ uri: this.mysqlUrl, connectTimeout: 5_000 });
    try {
      const [rows] = await connection.query(sql);
      return rows as T;
    } finally {
      await connection.end().catch(() => undefined);
    }
  }
}
