import { parseArgs } from 'node:util';
import { DEFAULT_READS, writeEdge } from './edge-render.js';
import { runCli } from './run-cli.js';

/**
 * Writes an edge instance's folder (nginx.conf from edge/nginx.conf.template, the Lua's settings,
 * the 429 pages) with the app's configuration from the environment, as scripts/edge.sh and
 * scripts/topology.sh run it; prints the path of nginx.conf. Exit 2 on bad options.
 *
 *   node dist/cli/edge-config.js --prefix DIR --listen 127.0.0.1:8080 --sale 127.0.0.1:8081 [--site …]
 *     [--web-root web/dist] [--workers auto] [--order-rate 5] [--order-burst 10] [--sale-conn 16]
 *     [--exempt "127.0.0.1 ::1"] [--reads on|off] [--push on|off] [--l1-ttl-ms 30000]
 *     [--l1-unpushed-ttl-ms 1000] [--l1-jitter-percent 20]
 *     [--l1-size 32m] [--redis-timeout-ms 100] [--redis-backoff-ms 1000] [--max-record-bytes 65536]
 *     [--sales on|off] [--sale-fresh-ms 50] [--sale-beat-ms 10] [--sale-read-gap-ms 100]
 */
const USAGE = 'usage: edge-config --prefix DIR --listen HOST:PORT --sale HOST:PORT[,…] [--site HOST:PORT[,…]] [options]: see src/cli/edge-config.ts';

const options = {
  prefix: { type: 'string' },
  listen: { type: 'string' },
  sale: { type: 'string' },
  site: { type: 'string' },
  'web-root': { type: 'string' },
  workers: { type: 'string', default: 'auto' },
  'order-rate': { type: 'string', default: '5' },
  'order-burst': { type: 'string', default: '10' },
  'sale-conn': { type: 'string', default: '16' },
  exempt: { type: 'string', default: '127.0.0.1' },
  reads: { type: 'string', default: 'on' },
  push: { type: 'string', default: 'on' },
  'l1-unpushed-ttl-ms': { type: 'string', default: String(DEFAULT_READS.l1UnpushedTtlMs) },
  'l1-ttl-ms': { type: 'string', default: String(DEFAULT_READS.l1TtlMs) },
  'l1-jitter-percent': { type: 'string', default: String(DEFAULT_READS.l1JitterPercent) },
  'l1-size': { type: 'string', default: DEFAULT_READS.l1Size },
  'redis-timeout-ms': { type: 'string', default: String(DEFAULT_READS.redisTimeoutMs) },
  'redis-backoff-ms': { type: 'string', default: String(DEFAULT_READS.redisBackoffMs) },
  'max-record-bytes': { type: 'string', default: String(DEFAULT_READS.maxRecordBytes) },
  sales: { type: 'string', default: 'on' },
  'sale-fresh-ms': { type: 'string', default: String(DEFAULT_READS.saleFreshMs) },
  'sale-beat-ms': { type: 'string', default: String(DEFAULT_READS.saleBeatMs) },
  'sale-read-gap-ms': { type: 'string', default: String(DEFAULT_READS.saleReadGapMs) },
} as const;

class UsageError extends Error {}

function count(name: string, text: string, min: number, max: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max)
    throw new UsageError(`--${name} must be an integer from ${min} to ${max} (got ${JSON.stringify(text)})`);
  return value;
}

function addresses(name: string, text: string | undefined): string[] {
  const list = (text ?? '').split(',').filter(Boolean);
  for (const address of list)
    if (!/^[\w.-]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$/.test(address)) throw new UsageError(`--${name}: ${JSON.stringify(address)} is not host:port`);
  return list;
}

await runCli('edge-config', async (config) => {
  try {
    const { values } = parseArgs({ options, allowPositionals: false });
    if (values.prefix === undefined || values.listen === undefined || values.sale === undefined) throw new UsageError(USAGE);
    const salePool = addresses('sale', values.sale);
    const sitePool = values.site === undefined ? salePool : addresses('site', values.site);
    const exempt = values.exempt.split(/\s+/).filter(Boolean);
    for (const address of exempt)
      if (!/^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(address)) throw new UsageError(`--exempt: ${JSON.stringify(address)} is not an address or CIDR`);
    if (values.reads !== 'on' && values.reads !== 'off') throw new UsageError('--reads is on or off');
    if (values.push !== 'on' && values.push !== 'off') throw new UsageError('--push is on or off');
    if (values.sales !== 'on' && values.sales !== 'off') throw new UsageError('--sales is on or off');
    if (!/^\d+[km]?$/.test(values['l1-size'])) throw new UsageError('--l1-size is a size like 32m');
    const file = await writeEdge(config, {
      prefix: values.prefix,
      listen: addresses('listen', values.listen)[0] ?? values.listen,
      salePool,
      sitePool,
      ...(values['web-root'] ? { webRoot: values['web-root'] } : {}),
      workers: values.workers === 'auto' ? 'auto' : count('workers', values.workers, 1, 64),
      orderRate: count('order-rate', values['order-rate'], 1, 100_000),
      orderBurst: count('order-burst', values['order-burst'], 1, 100_000),
      saleConn: count('sale-conn', values['sale-conn'], 1, 100_000),
      exempt,
      reads: {
        enabled: values.reads === 'on',
        l1TtlMs: count('l1-ttl-ms', values['l1-ttl-ms'], 1, 3_600_000),
        l1UnpushedTtlMs: count('l1-unpushed-ttl-ms', values['l1-unpushed-ttl-ms'], 1, 3_600_000),
        push: values.push === 'on',
        l1JitterPercent: count('l1-jitter-percent', values['l1-jitter-percent'], 0, 100),
        l1Size: values['l1-size'],
        redisTimeoutMs: count('redis-timeout-ms', values['redis-timeout-ms'], 1, 60_000),
        redisBackoffMs: count('redis-backoff-ms', values['redis-backoff-ms'], 0, 60_000),
        maxRecordBytes: count('max-record-bytes', values['max-record-bytes'], 1, 64 * 1024 * 1024),
        sales: values.sales === 'on',
        saleFreshMs: count('sale-fresh-ms', values['sale-fresh-ms'], 5, 60_000),
        saleBeatMs: count('sale-beat-ms', values['sale-beat-ms'], 1, 60_000),
        saleReadGapMs: count('sale-read-gap-ms', values['sale-read-gap-ms'], 1, 60_000),
      },
    });
    console.log(file);
  } catch (error) {
    if (!(error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS'))) throw error;
    console.error(`edge-config: ${(error as Error).message}`);
    process.exitCode = 2;
  }
});
