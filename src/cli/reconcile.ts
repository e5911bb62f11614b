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
 * Exit codes: 0 no drift (or all of it repaired), 1 drift found and not repaired, 2 bad options
 * (or an unknown voucher), 3 could not run (Redis or MySQL unreachable, bad configuration).
 */
const USAGE = 'usage: reconcile [--repair] [--voucher <id> ...] [--json] [--drain-timeout-ms <ms>]';

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
  console.log(
    `reconcile: ${where}: ${report.vouchers} seckill vouchers checked${repair ? '' : ' (snapshot of a possibly running sale; --repair freezes each drifted voucher for an exact answer)'}`,
  );
  for (const drift of report.drifted) {
    const parts = [`stock redis=${drift.redisStock ?? 'missing'} expected=${drift.expectedStock} (mysql ${drift.mysqlStock})`];
    if (drift.missingBuyers.length > 0) parts.push(`missing buyers ${drift.missingBuyers.join(',')}`);
    if (drift.extraBuyers.length > 0) parts.push(`extra buyers ${drift.extraBuyers.join(',')}`);
    if (drift.missingBuckets && drift.missingBuckets.length > 0) parts.push(`buckets missing ${drift.missingBuckets.join(',')} of ${drift.buckets ?? 1}`);
    console.log(`  voucher ${drift.voucherId}: ${parts.join('; ')}`);
  }
  for (const skipped of report.skipped) console.log(`  voucher ${skipped.voucherId}: NOT repaired: ${skipped.reason}`);
  for (const transfer of report.pendingTransfers ?? []) {
    console.log(
      `  voucher ${transfer.voucherId}: transfer ${transfer.transferId} of ${transfer.units} units from bucket ${transfer.from} to ${transfer.to} pending for ${transfer.ageMs} ms${transfer.given ? ' (given, not yet settled)' : ''}: not drift (the sweep ends it after 10 s)`,
    );
  }
  const summary = report.drifted.length === 0 ? 'no drift' : `${report.drifted.length} drifted, ${report.repaired} repaired`;
  console.log(`reconcile: ${summary}`);
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
    const sale = buildSale(redis, new SaleKeys(config.seckill.streamShards, config.seckill.maxBuckets > 1));
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
    const unrepaired = report.drifted.length - report.repaired;
    process.exitCode = unrepaired > 0 ? 1 : 0;
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
