/**
 * `npm run bench -- hot-voucher`: what one Redis core sustains of reserve.lua on a single voucher
 * (docs/bench-hot-voucher.md). Every order of one voucher runs on the one core of the one Redis
 * (Cluster slot) that holds its stock: this is the ceiling of a single sale, however many app
 * instances stand in front. First the one-core cases (one-core.ts), then one voucher sold out from
 * B = 1, 2, 3 buckets on a Redis Cluster (buckets.ts): CPU per order on each master, the projected
 * ceiling, refills, the last 1 % and the sale checks.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../../src/infra/config.js';
import { loadAverage } from '../harness/index.js';
import { measureBucketed } from './buckets.js';
import type { BucketedRow } from './bucketed-row.js';
import { measureHotVoucher, type HotVoucherRow } from './one-core.js';
import { renderBucketed, renderHotVoucher } from './render.js';

const USAGE = `npm run bench -- hot-voucher [--seconds S] [--connections N] [--in-flight N] [--stock N] [--buckets LIST] [--buckets-only] [--smoke] [--json]

  --seconds S        each one-core case (default 8)
  --connections N    ioredis connections of the driver (default 4)
  --in-flight N      orders awaiting an answer at once: one-core cases, over all connections; bucketed sales, per bucket (default 256)
  --stock N          units of each bucketed sale (default 200000)
  --buckets LIST     the B of the bucketed sales, on a Redis Cluster of 3 masters + 3 replicas (default 1,2,3)
  --buckets-only     only the bucketed sales (not the one-core cases)
  --smoke            seconds in all, small numbers (the tests): --seconds 0.3 --stock 3000 --in-flight 64

Each one-core case runs one order per script run, then batched (at most SECKILL_RESERVE_BATCH_MAX orders a run, the app's setting);
the bucketed sales are batched. Exit code 1 when a bucketed sale fails a check, 2 on bad options.`;

export interface HotVoucherReport {
  command: string;
  loadAverage: string;
  /** One Redis core, B = 1: the cases of measureHotVoucher. */
  rows: HotVoucherRow[];
  /** One voucher from B buckets on a Redis Cluster (buckets.ts). */
  bucketed: BucketedRow[];
  pass: boolean;
}

export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        seconds: { type: 'string' },
        connections: { type: 'string', default: '4' },
        'in-flight': { type: 'string' },
        stock: { type: 'string' },
        buckets: { type: 'string', default: '1,2,3' },
        'buckets-only': { type: 'boolean', default: false },
        smoke: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
      strict: true,
    });
  } catch (error) {
    console.error(`bench hot-voucher: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { values } = parsed;
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const smoke = values.smoke;
  const seconds = Number(values.seconds ?? (smoke ? '0.3' : '8'));
  const connections = Number(values.connections);
  const inFlight = Number(values['in-flight'] ?? (smoke ? '64' : '256'));
  const stock = Number(values.stock ?? (smoke ? '3000' : '200000'));
  const buckets = values.buckets.split(',').map(Number);
  const goodBuckets = buckets.length > 0 && buckets.every((b) => Number.isInteger(b) && b >= 1 && b <= 3);
  if (!(seconds > 0) || !(connections >= 1) || !(inFlight >= connections) || !(Number.isInteger(stock) && stock >= 100) || !goodBuckets) {
    console.error(`bench hot-voucher: bad option (buckets: 1 to 3, as many as the Cluster's masters; stock: 100 or more)\n\n${USAGE}`);
    return 2;
  }
  const report = await runHotVoucher(
    { seconds, connections, inFlight, stock, buckets, oneCore: !values['buckets-only'] },
    ['npm run bench -- hot-voucher', ...argv].join(' '),
  );
  console.log(values.json ? JSON.stringify(report, null, 2) : renderReport(report));
  if (!report.pass) console.error('bench hot-voucher: a sale check FAILED (see the checks above)');
  return report.pass ? 0 : 1;
}

export async function runHotVoucher(
  options: { seconds: number; connections: number; inFlight: number; stock: number; buckets: number[]; oneCore: boolean },
  command: string,
): Promise<HotVoucherReport> {
  const before = await loadAverage();
  const rows = options.oneCore ? await measureHotVoucher(options) : [];
  const bucketed = await measureBucketed({ ...options, batchMax: loadConfig().seckill.reserveBatchMax });
  return { command, loadAverage: `${before} → ${await loadAverage()}`, rows, bucketed, pass: bucketed.every((row) => row.pass) };
}

function renderReport(report: HotVoucherReport): string {
  return [
    `\`${report.command}\`; load average ${report.loadAverage} (1, 5, 15 min; start → end).`,
    ...(report.rows.length > 0 ? ['', '### One Redis core (B = 1, a redis-server of its own)', '', renderHotVoucher(report.rows)] : []),
    '',
    '### One voucher from B buckets (Redis Cluster, 3 masters + 3 replicas, batched)',
    '',
    renderBucketed(report.bucketed),
  ].join('\n');
}
