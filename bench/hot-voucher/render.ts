/** The hot-voucher tables as Markdown: the one-core cases, and the bucketed sales. */
import type { BucketedRow } from './bucketed-row.js';
import type { HotVoucherRow } from './one-core.js';

export function renderHotVoucher(rows: HotVoucherRow[]): string {
  const n = (value: number) => value.toLocaleString('en-US');
  const decided = (row: HotVoucherRow) => (row.batchCap === 1 ? 'one at a time' : `batched (≤ ${row.batchCap})`);
  return [
    "| case | decided | orders/s | orders per script run | Redis CPU µs/order | script wall µs/order (commandstats) | Redis core busy | one core's ceiling, orders/s | driver µs/order |",
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (row) =>
        `| ${row.case} | ${decided(row)} | ${n(row.ordersPerSecond)} | ${row.ordersPerScriptRun} | ${row.redisMicrosPerOrder} | ${row.scriptMicrosPerOrder} | ${Math.round(row.redisCpuShare * 100)} % | ${n(row.oneCoreCeiling)} | ${row.driverMicrosPerOrder} |`,
    ),
    '',
    'Inside the script, per order (commandstats: calls and µs in the command; the rest of the script wall is Lua itself):',
    '',
    ...rows.map(
      (row) =>
        `- ${row.case}, ${decided(row)}: ${row.commandsPerOrder.map((command) => `${command.command} ${command.calls}× ${command.micros} µs`).join(', ')}`,
    ),
  ].join('\n');
}

/** The bucketed sales as Markdown: one row per B, then each master's CPU per order and the checks. */
export function renderBucketed(rows: BucketedRow[]): string {
  const n = (value: number) => value.toLocaleString('en-US');
  const ports = rows[0]?.masters.map((master) => master.port) ?? [];
  const last = (row: BucketedRow) => {
    const p = row.lastPercent;
    return `${n(p.requests)} req, ${n(p.reserves)} reserve runs, ${p.refills} refills, ${n(p.ms)} ms (avg 1 %: ${n(p.averageMs)} ms)`;
  };
  return [
    '| B | stock | accepted/s (driver) | ' +
      ports.map((_, index) => `master ${index + 1} µs/order`).join(' | ') +
      ' | replicas µs/order | projected ceiling, orders/s | vs B = 1 | orders per reserve run | reserve runs per order | refills per 1,000 | bucket readings per 1,000 | 503 retried | last 1 % of stock |',
    '|---:|---:|---:|' + ports.map(() => '---:').join('|') + '|---:|---:|---:|---:|---:|---:|---:|---:|---|',
    ...rows.map(
      (row) =>
        `| ${row.buckets}${row.buyers === 'skewed' ? ', 9 in 10 buyers to b0' : ''} | ${n(row.stock)} | ${n(row.ordersPerSecond)} | ` +
        row.masters.map((master) => `${master.microsPerOrder}${master.buckets.length > 0 ? ` (b${master.buckets.join(',')})` : ''}`).join(' | ') +
        ` | ${row.replicasMicrosPerOrder} | ${n(row.projectedCeiling)} | ${row.ceilingVsOneBucket}× | ${row.ordersPerScriptRun} | ${row.reservesPerOrder} | ${row.refillsPer1000} | ${row.bucketReadingsPer1000} | ${row.retries} | ${last(row)} |`,
    ),
    '',
    'Projected ceiling = 1e6 / (µs of CPU per accepted order on the busiest master): the rate at which that master, one',
    "single-threaded process on one core, would be busy all the time; the other masters are then below a full core. Each master's",
    'µs per order is its /proc CPU from the first order to the last unit taken, divided by the orders accepted.',
    '',
    ...rows.map(
      (row) =>
        `- B = ${row.buckets}${row.buyers === 'skewed' ? ', skewed' : ''}: ${row.checks.map((check) => `${check.pass ? 'PASS' : 'FAIL'} ${check.name} (${check.detail})`).join('; ')}`,
    ),
  ].join('\n');
}
