import type { BinlogPosition, FollowerObserver, FollowerRole, GapReason, SavedPosition } from '../../lib/cdc/index.js';
import type { Log } from '../../infra/logging.js';
import type { CdcMetrics } from './cdc-metrics.js';

/** What the follower's health endpoint shows. */
export interface FollowerHealth {
  role: FollowerRole;
  /** Fencing token of the current term (active only). */
  token?: string;
  /** The last position this process applied and saved. */
  position?: BinlogPosition;
  lastAppliedAt?: string;
  /** Lag of the last transaction applied, seconds. */
  lastLagSeconds?: number;
  /** Gaps this process met: the saved position missing or purged, every followed entry dropped. */
  gaps: Array<{ reason: GapReason; at: string; saved?: BinlogPosition; resumedAt: BinlogPosition }>;
  fencedSaves: number;
  errors: number;
  lastError?: { stage: string; message: string; at: string };
}

const MAX_GAPS_SHOWN = 10;

/** The observer of a follower: logs (a gap loudly), metrics and the health view. */
export function followerStatus(log: Log, metrics: CdcMetrics): { observer: FollowerObserver; health: () => FollowerHealth } {
  const health: FollowerHealth = { role: 'standby', gaps: [], fencedSaves: 0, errors: 0 };
  const observer: FollowerObserver = {
    onRole(role, token) {
      health.role = role;
      if (token === undefined) delete health.token;
      else health.token = token.toString();
      metrics.active.set(role === 'active' ? 1 : 0);
      log.info({ role, token: token?.toString() }, role === 'active' ? 'change follower: active' : `change follower: ${role}`);
    },
    onRowEvent(table, kind, rows) {
      metrics.events.inc({ table, kind }, rows);
    },
    onApplied(batch, appliedAt, position) {
      for (const transaction of batch) metrics.lag.observe(Math.max(0, appliedAt - transaction.committedAt) / 1000);
      metrics.transactions.inc(batch.length);
      metrics.lastApplied.set(appliedAt / 1000);
      health.position = position;
      health.lastAppliedAt = new Date(appliedAt).toISOString();
      health.lastLagSeconds = Math.max(0, appliedAt - batch[batch.length - 1]!.committedAt) / 1000;
    },
    onGap(reason: GapReason, saved: SavedPosition | undefined, resumedAt) {
      metrics.gaps.inc({ reason });
      const gap = { reason, at: new Date().toISOString(), ...(saved ? { saved: { file: saved.file, position: saved.position } } : {}), resumedAt };
      health.gaps = [...health.gaps, gap].slice(-MAX_GAPS_SHOWN);
      const message =
        reason === 'purged'
          ? 'change follower: THE SAVED BINLOG POSITION WAS PURGED; changes since it cannot be read: dropping every cached entry of the followed tables, resuming at the current position'
          : 'change follower: no saved position: dropping every cached entry of the followed tables, starting at the current position';
      (reason === 'purged' ? log.error : log.warn).call(log, gap, message);
    },
    onFenced(token) {
      health.fencedSaves += 1;
      metrics.fenced.inc();
      log.warn({ token: token.toString() }, 'change follower: position save refused (a newer follower holds the lease): standing by');
    },
    onError(stage, error) {
      health.errors += 1;
      health.lastError = { stage, message: error instanceof Error ? error.message : String(error), at: new Date().toISOString() };
      metrics.errors.inc({ stage });
      log.warn({ err: error, stage }, `change follower: ${stage} failed`);
    },
  };
  return { observer, health: () => structuredClone(health) };
}
