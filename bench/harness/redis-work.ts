/**
 * What an accepted order costs beyond CPU: Redis commands and script calls (INFO commandstats of
 * every Redis master the run uses) and the mean size of the sale's reserve batches (the server's
 * `seckill_reserve_batch_size` histogram, when it has one), counted over a saturation slice and
 * the order worker's drain after it, divided by the orders the slice accepted.
 *
 * Commandstats counts a command wherever it runs: the commands a script calls count beside the
 * EVALSHA that ran it. The bench's own reads in the window count too (the drain's polling: a
 * stream-stats script and an HLEN per shard every 100 ms), a few per slice against thousands of
 * orders; its INFO calls are left out.
 */
import type { Cluster } from 'ioredis';
import type { RedisClient } from '../../src/infra/redis.js';
import { scrapeMetrics } from './processes.js';

/** Calls of these commands are script calls. */
const SCRIPT_COMMANDS = new Set(['eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro']);

export interface CommandCount {
  commands: number;
  scripts: number;
  /** Calls by command name (`client|setname` for a subcommand). */
  byCommand: Record<string, number>;
}

/** A histogram's observations and their sum; null when the server does not export it. */
export type HistogramCount = { count: number; sum: number } | null;

/** The server's order worker: its MySQL write transactions and the orders they created; null without /metrics. */
export type WorkerWrites = { writes: number; orders: number } | null;

/** What one slice did: its accepted orders, and the commands, reserve batches and worker writes they took. */
export interface SliceWork extends CommandCount {
  accepted: number;
  reserveBatches: HistogramCount;
  workerWrites: WorkerWrites;
}

/** Sums `cmdstat_<name>:calls=N` over the lines of INFO commandstats (INFO itself left out: the bench's reads). */
export function parseCommandstats(text: string): CommandCount {
  const count: CommandCount = { commands: 0, scripts: 0, byCommand: {} };
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    const [, name = '', calls = '0'] = match;
    if (name === 'info') continue;
    count.commands += Number(calls);
    if (SCRIPT_COMMANDS.has(name)) count.scripts += Number(calls);
    count.byCommand[name] = Number(calls);
  }
  return count;
}

/** Commands so far on the Redis the client talks to: a standalone server, or every master of a Cluster. */
export async function countCommands(redis: RedisClient): Promise<CommandCount> {
  const servers = redis.isCluster ? (redis as Cluster).nodes('master') : [redis];
  const counts = await Promise.all(servers.map(async (server) => parseCommandstats(await server.info('commandstats'))));
  return counts.reduce(
    (sum, count) => ({
      commands: sum.commands + count.commands,
      scripts: sum.scripts + count.scripts,
      byCommand: addCalls(sum.byCommand, count.byCommand),
    }),
    { commands: 0, scripts: 0, byCommand: {} },
  );
}

/** Calls by command of `a` plus (or, with sign -1, minus) those of `b`; commands that end at 0 are left out. */
function addCalls(a: Record<string, number>, b: Record<string, number>, sign = 1): Record<string, number> {
  const sum = { ...a };
  for (const [name, calls] of Object.entries(b)) sum[name] = (sum[name] ?? 0) + sign * calls;
  return Object.fromEntries(Object.entries(sum).filter(([, calls]) => calls !== 0));
}

/** Count and sum of a Prometheus histogram in an exposition text, over all its label sets; null when absent. */
export function parseHistogram(text: string, name: string): HistogramCount {
  const total = (suffix: string): number | null => {
    let sum: number | null = null;
    for (const match of text.matchAll(new RegExp(`^${name}_${suffix}(?:\\{[^}]*\\})? ([\\d.e+-]+)$`, 'gm'))) sum = (sum ?? 0) + Number(match[1]);
    return sum;
  };
  const count = total('count');
  const sum = total('sum');
  return count === null || sum === null ? null : { count, sum };
}

/** A counter's value for one label set (`name{label="value"}`), summed if it appears more than once; null when absent. */
export function parseCounter(text: string, name: string, label: string): number | null {
  let sum: number | null = null;
  for (const match of text.matchAll(new RegExp(`^${name}\\{([^}]*)\\} ([\\d.e+-]+)$`, 'gm'))) {
    if (match[1]!.split(',').includes(label)) sum = (sum ?? 0) + Number(match[2]);
  }
  return sum;
}

/** The server's reserve batch histogram and its worker's writes now; nulls when it has none or /metrics does not answer. */
async function serverCounts(url: string): Promise<{ reserveBatches: HistogramCount; workerWrites: WorkerWrites }> {
  try {
    const response = await scrapeMetrics(url);
    if (!response.ok) return { reserveBatches: null, workerWrites: null };
    const text = await response.text();
    const writes = parseCounter(text, 'seckill_worker_mysql_attempts_total', 'kind="write"');
    const orders = parseCounter(text, 'seckill_worker_entries_total', 'result="created"');
    return {
      reserveBatches: parseHistogram(text, 'seckill_reserve_batch_size'),
      workerWrites: writes === null && orders === null ? null : { writes: writes ?? 0, orders: orders ?? 0 },
    };
  } catch {
    return { reserveBatches: null, workerWrites: null };
  }
}

const difference = <T extends Record<string, number>>(after: T | null, before: T | null): T | null =>
  after && before ? (Object.fromEntries(Object.keys(after).map((key) => [key, after[key]! - before[key]!])) as T) : null;

/**
 * Starts counting a slice's work once the order workers have drained (`drained`); the returned
 * function waits for them to drain again, then gives the counts since the start. /metrics is read outside the command
 * window: a scrape runs scripts of its own (stream stats, the open sales' stock).
 */
export async function startSliceWork(options: {
  redis: RedisClient;
  url: string;
  accepted: () => number;
  drained: () => Promise<unknown>;
}): Promise<() => Promise<SliceWork>> {
  await options.drained(); // what earlier loads left queued is not this slice's
  const serverBefore = await serverCounts(options.url);
  const acceptedBefore = options.accepted();
  const before = await countCommands(options.redis);
  return async () => {
    await options.drained();
    const after = await countCommands(options.redis);
    const accepted = options.accepted() - acceptedBefore;
    const serverAfter = await serverCounts(options.url);
    return {
      accepted,
      commands: after.commands - before.commands,
      scripts: after.scripts - before.scripts,
      byCommand: addCalls(after.byCommand, before.byCommand, -1),
      reserveBatches: difference(serverAfter.reserveBatches, serverBefore.reserveBatches),
      workerWrites: difference(serverAfter.workerWrites, serverBefore.workerWrites),
    };
  };
}

/** A sale's work per accepted order over its slices, with its CPU per accepted order by process. */
export interface WorkPerOrder {
  /** Orders accepted in the counted slices. */
  accepted: number;
  commandsPerOrder: number;
  scriptsPerOrder: number;
  /** Calls per accepted order by command, most first. */
  byCommand: Record<string, number>;
  /** Orders per reserve script call: null when the server exports no `seckill_reserve_batch_size`. */
  meanReserveBatch: number | null;
  /**
   * Orders its own order worker created per MySQL write transaction (`seckill_worker_entries_total`
   * over `seckill_worker_mysql_attempts_total{kind="write"}`); null without /metrics or writes.
   */
  ordersPerWorkerWrite: number | null;
  /** CPU µs per accepted order (the slices' CPU per answer × answers ÷ accepted orders). */
  cpuPerOrder: { server: number; redis: number; mariadb: number; broker: number; total: number };
}

export function workPerOrder(
  slices: ReadonlyArray<{ requests: number; cpu?: Record<'server' | 'redis' | 'mariadb' | 'broker' | 'total', number>; work?: SliceWork }>,
): WorkPerOrder | undefined {
  const counted = slices.filter((slice): slice is typeof slice & { work: SliceWork } => slice.work !== undefined);
  if (counted.length === 0) return undefined;
  const accepted = counted.reduce((sum, slice) => sum + slice.work.accepted, 0);
  const per = (value: number) => (accepted > 0 ? value / accepted : Number.NaN);
  const total = (pick: (work: SliceWork) => number) => counted.reduce((sum, slice) => sum + pick(slice.work), 0);
  const cpu = (part: 'server' | 'redis' | 'mariadb' | 'broker' | 'total') =>
    per(counted.reduce((sum, slice) => sum + (slice.cpu?.[part] ?? Number.NaN) * slice.requests, 0));
  const batches = counted.every((slice) => slice.work.reserveBatches !== null)
    ? counted.reduce((sum, slice) => ({ count: sum.count + slice.work.reserveBatches!.count, sum: sum.sum + slice.work.reserveBatches!.sum }), {
        count: 0,
        sum: 0,
      })
    : null;
  const writes = counted.every((slice) => slice.work.workerWrites !== null)
    ? counted.reduce((sum, slice) => ({ writes: sum.writes + slice.work.workerWrites!.writes, orders: sum.orders + slice.work.workerWrites!.orders }), {
        writes: 0,
        orders: 0,
      })
    : null;
  return {
    accepted,
    commandsPerOrder: per(total((work) => work.commands)),
    scriptsPerOrder: per(total((work) => work.scripts)),
    byCommand: Object.fromEntries(
      Object.entries(counted.reduce<Record<string, number>>((sum, slice) => addCalls(sum, slice.work.byCommand), {}))
        .map(([name, calls]): [string, number] => [name, Math.round(per(calls) * 1000) / 1000])
        .sort(([, a], [, b]) => b - a),
    ),
    meanReserveBatch: batches && batches.count > 0 ? batches.sum / batches.count : null,
    ordersPerWorkerWrite: writes && writes.writes > 0 ? writes.orders / writes.writes : null,
    cpuPerOrder: { server: cpu('server'), redis: cpu('redis'), mariadb: cpu('mariadb'), broker: cpu('broker'), total: cpu('total') },
  };
}
