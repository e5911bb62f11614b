import type { Cluster, Redis } from 'ioredis';

/** A standalone Redis or a Redis Cluster (ioredis). */
export type RedisClient = Redis | Cluster;

/** One row changed by a committed transaction, as the binlog's row event carries it. */
export interface RowChange {
  table: string;
  kind: 'insert' | 'update' | 'delete';
  /** The row before (update, delete). */
  before?: Record<string, unknown>;
  /** The row after (insert, update). */
  after?: Record<string, unknown>;
}

/** A committed transaction of the followed tables. */
export interface CommittedTransaction {
  /** Binlog file and position right after its commit (XID) event: where to resume once it is applied. */
  file: string;
  position: number;
  /** The commit's time (the XID event's timestamp, whole seconds), epoch ms. */
  committedAt: number;
  changes: RowChange[];
}
