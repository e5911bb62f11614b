/**
 * `npm run bench [-- options]`: throughput, latency and correctness of hmdp-ts in one run on one
 * machine (see USAGE in harness/options.ts, bench/README.md and docs/BENCHMARKS.md). Exit code 1
 * when a correctness check fails, 2 on bad options.
 *
 * It uses the local MariaDB (scripts/services.sh) in a database of its own and a redis-server it
 * starts on a free port (or, with --shared-redis, REDIS_URL under a key prefix of its own), removed
 * afterwards, and starts a server process per scenario. `growth` and `hot-voucher` as the first
 * argument run bench/growth/ and bench/hot-voucher/ instead.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadConfig } from '../src/infra/config.js';
import { startRedisServer, type RedisServer } from '../kit/redis-servers.js';
import {
  attachWorld,
  createOwnWorld,
  describeMachine,
  loadAverage,
  mariadbPid,
  measureAll,
  OptionsError,
  parseBenchOptions,
  redisPid,
  USAGE,
  type BenchOptions,
} from './harness/index.js';
import { measureIds, measureLockBench, type OpsRow } from './micro/index.js';
import { computeTargets, Progress, renderMarkdown, summariseProfiles, writeDocs, type BenchReport } from './reports/index.js';
import {
  prepareBaseline,
  prepareEdgeShop,
  prepareOrders,
  prepareRabbitSale,
  prepareSale,
  prepareSemaphoreSale,
  prepareShopHot,
  prepareShopRedis,
  prepareSoldOut,
  type EdgeSaleResult,
  type PreparedScenario,
} from './scenarios/index.js';

/** `env`: where an attached world (`--target`) reads the servers' configuration. */
export async function runBench(options: BenchOptions, progress = new Progress(), env: Record<string, string | undefined> = process.env): Promise<BenchReport> {
  const startedAt = new Date().toISOString();
  progress.step(`preparing ${options.users} users with sessions`);
  // A Redis of the run's own: others' commands on a shared one would count as this run's CPU.
  const ownRedis: RedisServer | undefined = options.target || options.sharedRedis ? undefined : await startRedisServer();
  const world = options.target
    ? await attachWorld(loadConfig(env), options.users)
    : await createOwnWorld({ ...options, redisUrl: ownRedis?.url ?? options.redisUrl }).catch(async (error: unknown) => {
        await ownRedis?.kill();
        throw error;
      });
  const profileDir = options.cpuProf ? await mkdtemp(join(tmpdir(), 'hmdp-bench-prof-')) : undefined;
  try {
    const { commandLine, ...rest } = options;
    const report: BenchReport = {
      startedAt,
      finishedAt: startedAt,
      commandLine,
      machine: await describeMachine(world),
      loadAverage: await loadAverage(),
      options: rest,
      seckill: [],
      targets: [],
      pass: true,
    };
    const wanted = new Set(options.scenarios);
    // Every HTTP scenario's server runs from the start, so that their saturation slices can take turns.
    const prepared: Array<PreparedScenario<unknown>> = [];
    try {
      progress.step('starting servers, creating vouchers');
      // The sale through the edge (edge-sale.ts), in the order of SCENARIOS: each pair's slices alternate.
      const profileOf = (name: string) => (profileDir ? join(profileDir, name) : undefined);
      const orderPair = (['proxy', 'edge'] as const).filter((kind) => wanted.has(`${kind}-order`));
      const edgeSalePrepared = Promise.allSettled([
        wanted.has('app-sold-out') ? prepareSoldOut(world, 'app', profileOf('app-sold-out')) : undefined,
        wanted.has('edge-sold-out') ? prepareSoldOut(world, 'edge') : undefined,
        orderPair.length > 0 ? prepareOrders(world, options, orderPair, profileOf('orders')) : undefined,
      ]);
      // Side by side: each server's start mostly waits on its imports and connections.
      const settled = await Promise.allSettled([
        wanted.has('baseline')
          ? prepareBaseline(
              world,
              profileDir && !options.target ? join(profileDir, 'baseline') : undefined,
              wanted.has('seckill-async') ? 'seckill-async' : undefined,
            )
          : undefined,
        wanted.has('seckill-async')
          ? prepareSale('async', options, world, options.target ? undefined : profileDir && join(profileDir, 'seckill-async'))
          : undefined,
        wanted.has('seckill-rabbitmq') && !options.target ? prepareRabbitSale(options, ownRedis?.url ?? options.redisUrl) : undefined,
        wanted.has('seckill-gated') ? prepareSale('async', options, world, undefined, true) : undefined,
        wanted.has('seckill-sync') ? prepareSale('sync', options, world) : undefined,
        wanted.has('seckill-semaphore') ? prepareSemaphoreSale(options, world) : undefined,
        wanted.has('shop-hot') ? prepareShopHot(world, profileDir && !options.target ? join(profileDir, 'shop-hot') : undefined) : undefined,
        wanted.has('shop-redis') ? prepareShopRedis(world) : undefined,
        wanted.has('edge-shop-l1') ? prepareEdgeShop(world, 'l1') : undefined,
        wanted.has('edge-shop-l2') ? prepareEdgeShop(world, 'l2') : undefined,
      ]);
      // What did start is stopped in `finally` even when another scenario failed to.
      const edgeSale = await edgeSalePrepared;
      for (const result of [...settled, ...edgeSale]) if (result.status === 'fulfilled' && result.value) prepared.push(result.value);
      const failure = [...settled, ...edgeSale].find((result) => result.status === 'rejected');
      if (failure) throw failure.reason;
      const [baseline, async, rabbit, gated, sync, semaphore, shopHot, shopRedis, edgeL1, edgeL2] = fulfilledValues(settled);
      const cpuPids = { redis: await redisPid(world.redis), mariadb: options.target ? undefined : await mariadbPid(world.db) };
      const measurements = await measureAll(
        prepared.flatMap((scenario) => scenario.targets),
        { ...options, cpuPids },
        (label, seconds) => progress.step(label, seconds),
        options.rounds,
      );
      progress.step('checking the sales');
      if (baseline) report.baseline = await baseline.finish(measurements);
      if (async) report.seckill.push(await async.finish(measurements));
      if (rabbit) report.seckill.push(await rabbit.finish(measurements));
      if (gated) report.seckill.push(await gated.finish(measurements));
      if (sync) report.seckill.push(await sync.finish(measurements));
      if (semaphore) report.seckill.push(await semaphore.finish(measurements));
      if (shopHot) {
        const [cached, bare] = await shopHot.finish(measurements);
        report.shopHot = { cached, bare };
      }
      if (shopRedis) report.shopRedis = await shopRedis.finish(measurements);
      if (edgeL1 || edgeL2) {
        report.edgeShop = {
          ...(edgeL1 ? { l1: await edgeL1.finish(measurements) } : {}),
          ...(edgeL2 ? { l2: await edgeL2.finish(measurements) } : {}),
        };
      }
      const edgeSaleResults: EdgeSaleResult[] = [];
      for (const scenario of fulfilledValues(edgeSale)) if (scenario) edgeSaleResults.push(...[await scenario.finish(measurements)].flat());
      if (edgeSaleResults.length > 0) report.edgeSale = edgeSaleResults;
    } finally {
      await Promise.all(prepared.map((scenario) => scenario.stop()));
    }
    const { microMs } = options;
    if (wanted.has('id')) {
      progress.step('id: IdGenerator.nextId vs INCR', (microMs * 3) / 1000);
      report.ids = await measureIds(world.redis, { durationMs: microMs, parallelism: 64 });
    }
    if (wanted.has('lock')) {
      progress.step('lock: lock + unlock pairs vs redlock and redis-semaphore', (microMs * 16) / 1000); // 8 locks × 2 modes
      report.locks = lockRows(await measureLockBench({ redisUrl: options.redisUrl, durationMs: microMs }));
    }
    if (profileDir) report.profiles = await summariseProfiles(profileDir);
    report.targets = computeTargets(report);
    report.pass = report.seckill.every((sale) => sale.pass) && (report.edgeSale ?? []).every((scenario) => scenario.pass);
    report.finishedAt = new Date().toISOString();
    report.loadAverage += ` → ${await loadAverage()}`;
    return report;
  } finally {
    progress.step('cleaning up');
    await world.destroy();
    await ownRedis?.kill();
    progress.done();
  }
}

/** The values of results that are all fulfilled (or undefined), each with its own type. */
function fulfilledValues<T extends readonly unknown[]>(results: { [K in keyof T]: PromiseSettledResult<T[K]> }): { [K in keyof T]: T[K] | undefined } {
  return results.map((result) => (result.status === 'fulfilled' ? result.value : undefined)) as { [K in keyof T]: T[K] | undefined };
}

/** The lock rows as ops, each compared with redlock in the same mode. */
function lockRows(rows: Awaited<ReturnType<typeof measureLockBench>>): OpsRow[] {
  return rows.map((row) => {
    const redlock = rows.find((other) => other.mode === row.mode && other.lock.startsWith('redlock'));
    const isRedlock = redlock === row;
    return {
      name: `${row.lock} lock+unlock`,
      mode: row.mode,
      ops: row.pairs,
      opsPerSecond: row.pairsPerSecond,
      ...(redlock && !isRedlock ? { baseline: 'redlock', ratio: row.pairsPerSecond / redlock.pairsPerSecond } : {}),
    };
  });
}

async function main(): Promise<number> {
  const [command, ...rest] = process.argv.slice(2);
  if (command === 'growth') return (await import('./growth/index.js')).main(rest);
  if (command === 'hot-voucher') return (await import('./hot-voucher/index.js')).main(rest);
  let options;
  try {
    options = parseBenchOptions(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof OptionsError)) throw error;
    console.error(`bench: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  if (options === 'help') {
    console.log(USAGE);
    return 0;
  }
  const report = await runBench(options, new Progress(process.stderr, false));
  if (options.json) console.log(JSON.stringify(report, null, 2));
  else console.log(renderMarkdown(report));
  if (options.write) {
    const written = await writeDocs(report, options.docsDir);
    console.error(`wrote ${written.markdown} and ${written.svg}`);
  }
  for (const profile of Object.values(report.profiles ?? {})) console.error(`CPU profile kept at ${profile.file}`);
  if (!report.pass) console.error('bench: a correctness check FAILED (see the checks above)');
  return report.pass ? 0 : 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = await main();
}
