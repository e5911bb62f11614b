import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** The change follower's series, on the process's registry. */
export function createCdcMetrics(registry: Registry) {
  const registers = [registry];
  return {
    lag: new Histogram({
      name: 'cdc_lag_seconds',
      help: "From a transaction's commit (its binlog event's time, whole seconds) until its invalidations were written and its position saved",
      buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300],
      registers,
    }),
    events: new Counter({
      name: 'cdc_row_events_total',
      help: 'Rows of the followed tables read from the binlog, by table and kind (insert, update, delete)',
      labelNames: ['table', 'kind'] as const,
      registers,
    }),
    transactions: new Counter({
      name: 'cdc_transactions_total',
      help: 'Committed transactions applied (those without a change of the followed tables too: their position counts)',
      registers,
    }),
    errors: new Counter({
      name: 'cdc_errors_total',
      help: 'Failures of the change follower by stage: read (the binlog stream), apply (an invalidation), save (the position), start (a term)',
      labelNames: ['stage'] as const,
      registers,
    }),
    gaps: new Counter({
      name: 'cdc_gaps_total',
      help: "Terms begun without a readable saved position, by reason (no-position, purged): the followed tables' cached entries were all dropped",
      labelNames: ['reason'] as const,
      registers,
    }),
    fenced: new Counter({
      name: 'cdc_fenced_saves_total',
      help: 'Position saves refused because a newer holder of the lease had saved (a paused former leader)',
      registers,
    }),
    active: new Gauge({
      name: 'cdc_active',
      help: '1 while this process is the active change follower, 0 while it stands by',
      registers,
    }),
    lastApplied: new Gauge({
      name: 'cdc_last_applied_timestamp_seconds',
      help: 'When this process last applied a batch (epoch seconds)',
      registers,
    }),
  };
}

export type CdcMetrics = ReturnType<typeof createCdcMetrics>;
