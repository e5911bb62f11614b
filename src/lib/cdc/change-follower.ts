import { setTimeout as sleep } from 'node:timers/promises';
import type { LockClient, LockHandle } from '../lock/index.js';
import { BinlogFiles } from './binlog-files.js';
import { BinlogReader } from './binlog-reader.js';
import { PositionStore, type BinlogPosition, type SavedPosition } from './position-store.js';
import type { CommittedTransaction, RedisClient, RowChange } from './types.js';

/** Why a term began without a usable saved position. */
export type GapReason = 'no-position' | 'purged';

export type FollowerRole = 'standby' | 'active' | 'stopped';

/** Hooks for logs, metrics and health; they must not throw. */
export interface FollowerObserver {
  onRole?(role: FollowerRole, token?: bigint): void;
  onRowEvent?(table: string, kind: RowChange['kind'], rows: number): void;
  /** A batch applied and its position saved; `appliedAt` epoch ms. */
  onApplied?(batch: readonly CommittedTransaction[], appliedAt: number, position: BinlogPosition): void;
  onGap?(reason: GapReason, saved: SavedPosition | undefined, resumeAt: BinlogPosition): void;
  /** A save was refused: a newer holder of the lease saved with a higher token. */
  onFenced?(token: bigint): void;
  onError?(stage: 'read' | 'apply' | 'save' | 'start', error: unknown): void;
}

export interface ChangeFollowerOptions {
  redis: RedisClient;
  /** The lease's lock client; its defaultLeaseMs is the lease (renewed every third of it by the watchdog), so a standby takes over about that long after the leader died. */
  locks: LockClient;
  /** Names the lease (`lock:{<name>}`) and the position key (`<name>:position`). */
  name: string;
  /** The followed database (see BinlogReaderOptions.mysqlUrl). */
  mysqlUrl: string;
  tables: readonly string[];
  serverId: number;
  /** Applies a batch of committed transactions; must be idempotent (a batch may be applied twice). */
  apply(batch: readonly CommittedTransaction[]): Promise<void>;
  /** Drops every cached entry of the followed tables: called when what changed since the saved position cannot be read. */
  dropAll(reason: GapReason): Promise<void>;
  /** Pause before retrying a failed apply or a failed term. Default 500. */
  retryMs?: number;
  observer?: FollowerObserver;
}

/**
 * One active change follower among any number of processes: the holder of a lease (src/lib/lock)
 * reads the binlog from the saved position, applies each batch of committed transactions, then
 * saves the position after the batch (the position applied, not the one read) under the lease's
 * fencing token. The others wait for the lease. A term ends when the lease is lost, a save is
 * refused (a newer leader saved with a higher token), or the stream fails; the process then waits
 * for the lease again and resumes from the saved position.
 */
export class ChangeFollower {
  readonly positions: PositionStore;
  private readonly files: BinlogFiles;
  private readonly retryMs: number;
  private role: FollowerRole = 'standby';

  constructor(private readonly options: ChangeFollowerOptions) {
    this.positions = new PositionStore(options.redis, `${options.name}:position`);
    this.files = new BinlogFiles(options.mysqlUrl);
    this.retryMs = options.retryMs ?? 500;
  }

  get currentRole(): FollowerRole {
    return this.role;
  }

  /** Follows until `signal` aborts: terms as leader, standby between them. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      this.setRole('standby');
      const handle = await this.options.locks
        .simpleLock(this.options.name)
        .lock({ signal })
        .catch((error: unknown) => {
          if (!signal.aborted) this.options.observer?.onError?.('start', error);
          return undefined;
        });
      if (handle === undefined) {
        if (!signal.aborted) await sleep(this.retryMs).catch(() => undefined);
        continue;
      }
      try {
        this.setRole('active', handle.fencingToken);
        await this.term(handle, signal);
      } catch (error) {
        if (error instanceof FencedError) this.options.observer?.onFenced?.(error.token);
        else this.options.observer?.onError?.('start', error);
      } finally {
        await handle.release().catch(() => false);
      }
      // A term ended (lease lost, fenced, the stream failed): a pause before waiting for the lease again.
      if (!signal.aborted) await sleep(this.retryMs).catch(() => undefined);
    }
    this.setRole('stopped');
  }

  /** One term as the active follower; returns when it must end (lease lost, fenced, stream failed, stopped). */
  private async term(handle: LockHandle, stop: AbortSignal): Promise<void> {
    const ended = AbortSignal.any([stop, handle.signal]);
    const from = await this.startingPosition(handle.fencingToken);
    const queue: CommittedTransaction[] = [];
    let wake: (() => void) | undefined;
    let streamError: Error | undefined;
    const reader = new BinlogReader({
      mysqlUrl: this.options.mysqlUrl,
      tables: this.options.tables,
      serverId: this.options.serverId,
      onTransaction: (transaction) => {
        queue.push(transaction);
        wake?.();
      },
      onError: (error) => {
        streamError = error;
        this.options.observer?.onError?.('read', error);
        wake?.();
      },
      onRowEvent: (table, kind, rows) => this.options.observer?.onRowEvent?.(table, kind, rows),
    });
    const onEnd = (): void => wake?.();
    ended.addEventListener('abort', onEnd);
    try {
      await reader.start(from);
      while (!ended.aborted && streamError === undefined) {
        if (queue.length === 0) {
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
          continue;
        }
        const batch = queue.splice(0, queue.length);
        if (!(await this.applyAndSave(batch, handle, ended))) return;
      }
    } finally {
      ended.removeEventListener('abort', onEnd);
      reader.stop();
    }
  }

  /**
   * The saved position, or after a gap (none saved, or its file purged) the server's current one:
   * read first, then the cached entries dropped, then saved, so a change committed meanwhile is
   * both dropped and followed.
   */
  private async startingPosition(token: bigint): Promise<BinlogPosition> {
    const saved = await this.positions.load();
    if (saved !== undefined && (await this.files.list()).includes(saved.file)) return saved;
    const reason: GapReason = saved === undefined ? 'no-position' : 'purged';
    const current = await this.files.current();
    this.options.observer?.onGap?.(reason, saved, current);
    await this.options.dropAll(reason);
    if (!(await this.positions.save(current, token))) throw new FencedError(token);
    return current;
  }

  /** Applies a batch until it succeeds (or the term ends), then saves its position; false: the term must end. */
  private async applyAndSave(batch: CommittedTransaction[], handle: LockHandle, ended: AbortSignal): Promise<boolean> {
    for (;;) {
      if (ended.aborted) return false;
      try {
        await this.options.apply(batch);
        break;
      } catch (error) {
        this.options.observer?.onError?.('apply', error);
        await sleep(this.retryMs).catch(() => undefined);
      }
    }
    // A lease lost while applying: the next leader replays this batch from the saved position.
    if (ended.aborted) return false;
    const last = batch[batch.length - 1]!;
    const position = { file: last.file, position: last.position };
    let saved: boolean;
    try {
      saved = await this.positions.save(position, handle.fencingToken);
    } catch (error) {
      this.options.observer?.onError?.('save', error);
      return false;
    }
    if (!saved) {
      this.options.observer?.onFenced?.(handle.fencingToken);
      return false;
    }
    this.options.observer?.onApplied?.(batch, Date.now(), position);
    return true;
  }

  private setRole(role: FollowerRole, token?: bigint): void {
    if (this.role === role) return;
    this.role = role;
    this.options.observer?.onRole?.(role, token);
  }
}

/** A save refused at the start of a term: a newer leader already saved. */
export class FencedError extends Error {
  constructor(readonly token: bigint) {
    super(`the position save under fencing token ${token} was refused: a newer follower holds the lease`);
    this.name = 'FencedError';
  }
}
