import ZongJi, { type AnyBinlogEvent, type DeleteRowsEvent, type UpdateRowsEvent, type WriteRowsEvent } from '@vlasky/zongji';
import type { BinlogPosition } from './position-store.js';
import type { CommittedTransaction, RowChange } from './types.js';

export interface BinlogReaderOptions {
  /** The followed database's URL (`mysql://user:password@host:port/database`); the user needs REPLICATION SLAVE, REPLICATION CLIENT and SELECT. */
  mysqlUrl: string;
  /** The followed tables of that database. */
  tables: readonly string[];
  /** Replica id this reader announces: unique among the server's replicas. */
  serverId: number;
  /** Each committed transaction, in binlog order (also those without a change of the followed tables: their position counts). */
  onTransaction(transaction: CommittedTransaction): void;
  /** The stream failed (connection lost, a decoding error): the reader is stopped. */
  onError(error: Error): void;
  /** Every row event of a followed table, before its commit is known. */
  onRowEvent?(table: string, kind: RowChange['kind'], rows: number): void;
}

const EVENTS = ['tablemap', 'writerows', 'updaterows', 'deleterows', 'rotate', 'xid'];

/**
 * The binlog's row events of some tables (`@vlasky/zongji`, a replica's dump connection), grouped
 * into committed transactions: rows are held until their transaction's XID event, so a transaction
 * rolled back (never written to the binlog) or still open yields nothing.
 */
export class BinlogReader {
  private zongji: ZongJi | undefined;
  private file = '';
  private pending: RowChange[] = [];

  constructor(private readonly options: BinlogReaderOptions) {}

  /** Starts reading at `from` (resolves once the dump connection is up). */
  start(from: BinlogPosition): Promise<void> {
    const url = new URL(this.options.mysqlUrl);
    const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
    const zongji = new ZongJi({
      host: url.hostname,
      port: Number(url.port || 3306),
      user: decodeURIComponent(url.username),
      password: decodeURIComponent(url.password),
    });
    this.zongji = zongji;
    this.file = from.file;
    this.pending = [];
    zongji.on('binlog', (event: AnyBinlogEvent) => this.onEvent(event));
    return new Promise((resolve, reject) => {
      zongji.once('ready', () => {
        zongji.on('error', (error: Error) => this.fail(error));
        resolve();
      });
      zongji.once('error', reject);
      zongji.start({
        serverId: this.options.serverId,
        filename: from.file,
        position: from.position,
        includeEvents: EVENTS,
        includeSchema: { [database]: [...this.options.tables] },
      });
    });
  }

  stop(): void {
    const zongji = this.zongji;
    this.zongji = undefined;
    if (zongji === undefined) return;
    zongji.removeAllListeners('binlog');
    zongji.on('error', () => undefined); // errors of a stream being closed are nobody's
    zongji.stop();
  }

  private fail(error: Error): void {
    if (this.zongji === undefined) return;
    this.stop();
    this.options.onError(error);
  }

  private onEvent(event: AnyBinlogEvent): void {
    try {
      this.take(event);
    } catch (error) {
      this.fail(error instanceof Error ? error : new Error(String(error)));
    }
  }

  private take(event: AnyBinlogEvent): void {
    switch (event.getEventName()) {
      case 'rotate':
        this.file = (event as { binlogName: string }).binlogName;
        return;
      case 'writerows':
        return this.rows(event as WriteRowsEvent, 'insert');
      case 'updaterows':
        return this.rows(event as UpdateRowsEvent, 'update');
      case 'deleterows':
        return this.rows(event as DeleteRowsEvent, 'delete');
      case 'xid': {
        const changes = this.pending;
        this.pending = [];
        this.options.onTransaction({ file: this.file, position: event.nextPosition, committedAt: event.timestamp, changes });
        return;
      }
      default:
        return;
    }
  }

  private rows(event: WriteRowsEvent | UpdateRowsEvent | DeleteRowsEvent, kind: RowChange['kind']): void {
    const table = event.tableMap[event.tableId]?.tableName;
    if (table === undefined) return;
    this.options.onRowEvent?.(table, kind, event.rows.length);
    for (const row of event.rows) {
      if (kind === 'update') {
        const { before, after } = row as { before: Record<string, unknown>; after: Record<string, unknown> };
        this.pending.push({ table, kind, before, after });
      } else {
        this.pending.push(kind === 'insert' ? { table, kind, after: row as Record<string, unknown> } : { table, kind, before: row as Record<string, unknown> });
      }
    }
  }
}
