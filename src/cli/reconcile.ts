import { parseArgs } from 'node:util';
import { loadConfig, type Config } from '../infra/config.js';
import type { Db } from '../infra/db.js';
import { redactUrl } from '../infra/migrate.js';
import type { RedisClient } from '../infra/redis.js';
import { type ReconcileReport, buildSale, reconcileSeckill, SaleKeys, UnknownVoucherError } from '../modules/seckill/index.js';
import { closeAll, openDb, openRedis } from './connections.js';
import { EXIT_UNAVAILABLE, failureExitCode } from './run-cli.js';

/**
 * Compares the seckill state in Redis (stock, buyers) with MySQL's orders and optionally repairs
 * Redis from MySQL (see src/modules/seckill/admin/reconcile.ts):
 *   npm run reconcile -- [--repair] [--voucher <id> ...] [--json] [--drain-timeout-ms <ms>]
 * Exit codes: USAGE below. A bucketed sale is read by its own bucket count (MySQL's, checked
 * against Redis's layout record), whatever SECKILL_MAX_BUCKETS says here.
 */
const USAGE = `usage: reconcile [--repair] [--voucher <id> ...] [--json] [--drain-timeout-ms <ms>]

exit codes:
  0  no drift (or all of it repaired), every voucher checked
  1  drift found and not repaired (whatever else)
  2  bad options, or an unknown voucher
  3  could not run (Redis or MySQL unreachable, bad configuration)
  4  some vouchers were not checked (listed with why); no drift left in the others`;

/** Exit code of a run that left vouchers unchecked and no drift in the others. */
const EXIT_UNCHECKED = 4;

function parseOptions(): { repair: boolean; json: boolean; voucherIds: string[]; drainTimeoutMs: number } | string {
  let parsed;
  try {
    parsed = parseArgs({
      args: process.argv.slice(2),
      options: {
        repair: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        voucher: { type: 'string', multiple: true, default: [] },
        'drain-timeout-ms': { type: 'string', default: '10000' },
        help: { type: 'boolean', default: false },
      },
      strict: true,
      allowPositionals: false,
    });
  } catch (error) {
    return (error as Error).message;
  }
  const { values } = parsed;
  if (values.help) return 'help';
  const voucherIds = values.voucher.flatMap((value) => value.split(',')).map((value) => value.trim());
  const bad = voucherIds.find((id) => !/^[1-9]\d{0,19}$/.test(id));
  if (bad !== undefined) return `--voucher must be a voucher id (a positive integer), got ${JSON.stringify(bad)}`;
  const drainTimeoutMs = Number(values['drain-timeout-ms']);
  if (!/^\d+$/.test(values['drain-timeout-ms']) || drainTimeoutMs < 0 || drainTimeoutMs > 600_000) {
    return `--drain-timeout-ms must be an integer from 0 to 600000, got ${JSON.stringify(values['drain-timeout-ms'])}`;
  }
  return { repair: values.repair, json: values.json, voucherIds, drainTimeoutMs };
}

function printText(report: ReconcileReport, repair: boolean, where: string): void {
  const unchecked = report.unchecked ?? [];
  const checked = unchecked.length === 0 ? `${report.vouchers}` : `${report.vouchers - unchecked.length} of ${report.vouchers}`;
  console.log(
    `reconcile: ${where}: ${checked} seckill vouchers checked${repair ? '' : ' (snapshot of a possibly running sale; --repair freezes each drifted voucher for an exact answer)'}`,
  );
  for (const drift of report.drifted) {
    const parts = [`stock redis=${drift.redisStock ?? 'missing'} expected=${drift.expectedStock} (mysql ${drift.mysqlStock})`];
    if (drift.missingBuyers.length > 0) parts.push(`missing buyers ${drift.missingBuyers.join(',')}`);
    if (drift.extraBuyers.length > 0) parts.push(`extra buyers ${drift.extraBuyers.join(',')}`);
    if (drift.missingBuckets && drift.missingBuckets.length > 0) parts.push(`buckets missing ${drift.missingBuckets.join(',')} of ${drift.buckets ?? 1}`);
    console.log(`  voucher ${drift.voucherId}: ${parts.join('; ')}`);
  }
  for (const skipped of report.skipped) console.log(`  voucher ${skipped.voucherId}: NOT repaired: ${skipped.reason}`);
  for (const voucher of unchecked) console.log(`  voucher ${voucher.voucherId}: NOT checked: ${voucher.reason}`);
  for (const transfer of report.pendingTransfers ?? []) {
    console.log(
      `  voucher ${transfer.voucherId}: transfer ${transfer.transferId} of ${transfer.units} units from bucket ${transfer.from} to ${transfer.to} pending for ${transfer.ageMs} ms${transfer.given ? ' (given, not yet settled)' : ''}: not drift (the sweep ends it after 10 s)`,
    );
  }
  console.log(`reconcile: ${verdict(report)}`);
}

/** The last line: never "no drift" alone when a voucher went unchecked. */
function verdict(report: ReconcileReport): string {
  const unchecked = report.unchecked?.length ?? 0;
  if (report.drifted.length > 0) {
    const drift = `${report.drifted.length} drifted, ${report.repaired} repaired`;
    return unchecked === 0 ? drift : `${drift}; ${unchecked} skipped (not checked)`;
  }
  return unchecked === 0 ? 'no drift' : `no drift in the ${report.vouchers - unchecked} checked; ${unchecked} skipped (not checked)`;
}

function exitCode(report: ReconcileReport): number {
  if (report.drifted.length > report.repaired) return 1;
  return (report.unchecked?.length ?? 0) > 0 ? EXIT_UNCHECKED : 0;
}

const options = parseOptions();
if (typeof options === 'string') {
  if (options === 'help') {
    console.log(USAGE);
  } else {
    console.error(`reconcile: ${options}\n${USAGE}`);
    process.exitCode = 2;
  }
} else {
  let config: Config | undefined;
  let db: Db | undefined;
  let redis: RedisClient | undefined;
  try {
    config = loadConfig();
    db = await openDb(config, 2);
    redis = await openRedis(config);
    // With the bucket lanes whatever SECKILL_MAX_BUCKETS says: a bucket's keys follow from the
    // voucher and its bucket count alone (keys.ts), so a bucketed sale is read by its own count
    // even where this shell, or the deployment since, sells new sales from one bucket.
    const sale = buildSale(redis, new SaleKeys(config.seckill.streamShards, true));
    const report = await reconcileSeckill(
      { db, sale },
      {
        repair: options.repair,
        voucherIds: options.voucherIds,
        drainTimeoutMs: options.drainTimeoutMs,
      },
    );
    if (options.json) console.log(JSON.stringify(report, null, 2));
    else printText(report, options.repair, redactUrl(config.mysqlUrl));
    process.exitCode = exitCode(report);
  } catch (error) {
    if (error instanceof UnknownVoucherError) {
      console.error(`reconcile: ${error.message}`);
      process.exitCode = 2;
    } else {
      failureExitCode('reconcile', error, config);
      process.exitCode = EXIT_UNAVAILABLE; // could not run, whatever the cause (documented above)
    }
  } finally {
    await closeAll(redis, db);
  }
  setTimeout(() => process.exit(), 2_000).unref(); // a silent dependency's socket cannot keep it running
}
