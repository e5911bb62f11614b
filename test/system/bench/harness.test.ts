/**
 * The benchmark harness itself, so it cannot rot: a smoke run of every scenario (seconds, small
 * numbers) whose sale checks must pass, one of the shop read's levels (the edge's nginx included),
 * checks that do fail on a broken sale, and the command line.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOwnWorld, parseBenchOptions, type BenchOptions, type World } from '../../../bench/harness/index.js';
import { Progress, renderMarkdown, renderSvg } from '../../../bench/reports/index.js';
import { runBench } from '../../../bench/run.js';
import { checkSale } from '../../../bench/sale/index.js';
import type { Sale } from '../../../src/modules/seckill/sale/sale.js';
import { ORDER_GROUP } from '../../../src/modules/seckill/keys.js';
import { testMysqlUrl, testRedisUrl } from '../../../kit/services.js';
import { createTestEnv, createUsersWithSessions, type TestEnv } from '../../support/test-env.js';
import { eventually } from '../../support/eventually.js';
import { freePort } from '../../../kit/redis-servers.js';
import { SECKILL_MESSAGES } from '../../../src/modules/seckill/messages.js';
import { productionServerEnv } from '../../support/production-server.js';

const run = promisify(execFile);
const quiet = new Progress(process.stderr, true);

function smokeOptions(...extra: string[]): BenchOptions {
  const options = parseBenchOptions(['--smoke', ...extra], { REDIS_URL: testRedisUrl(), MYSQL_SERVER_URL: testMysqlUrl() });
  if (options === 'help') throw new Error('unexpected help');
  return options;
}

describe('npm run bench --smoke', () => {
  it('runs every scenario, and every sale passes its correctness checks', { timeout: 480_000 }, async () => {
    const report = await runBench(smokeOptions(), quiet);

    expect(report.pass).toBe(true);
    expect(report.baseline?.saturation.rps).toBeGreaterThan(0);
    expect(report.baseline?.fixedRate.latency.p99).toBeGreaterThan(0);
    expect(report.seckill.map((sale) => sale.scenario)).toEqual(['seckill-async', 'seckill-rabbitmq', 'seckill-sync']);
    for (const sale of report.seckill) {
      expect(
        sale.checks.every((check) => check.pass),
        JSON.stringify(sale.checks),
      ).toBe(true);
      expect(sale.accepted).toBeGreaterThan(0);
      // The sold-out checks judge every sale from its buyers' answers (bench/sale/sold-out-ledger.ts soldOutChecks).
      expect(sale.checks.map((check) => check.name)).toEqual(expect.arrayContaining(['every unit sold', 'no false sold out']));
      // Fed by every answer, saturation's included: the vouchers that answered "sold out" were judged.
      expect(sale.checks.find((check) => check.name === 'every unit sold')?.detail).toMatch(/^[1-9]\d* vouchers sold out or fully sold/);
      // More buyers than stock: the sale crossed the sold-out boundary under load (the bench's
      // servers answer in English: bench/harness/processes.ts).
      expect(sale.refused[`200 ${SECKILL_MESSAGES.soldOut.texts.en}`]).toBeGreaterThan(0);
      expect(sale.saturation.errors + sale.fixedRate.errors).toBe(0);
    }
    expect(report.shopHot?.cached.saturation.rps).toBeGreaterThan(0);
    expect(report.shopHot?.bare.saturation.rps).toBeGreaterThan(0);
    // Each pair on one generator: wrk for the shop reads, whose answers change nothing; autocannon for the sales and the baseline they are judged against.
    expect(report.shopHot!.cached.saturation.generator).toBe('wrk');
    expect(report.shopHot!.bare.saturation.generator).toBe('wrk');
    for (const scenario of [report.baseline!, ...report.seckill]) expect(scenario.saturation.generator, scenario.scenario).toBe('autocannon');
    expect(report.ids?.find((row) => row.name === 'IdGenerator.nextId')?.opsPerSecond).toBeGreaterThan(0);
    expect(report.locks?.some((row) => row.baseline === 'redlock' && row.opsPerSecond > 0)).toBe(true);
    // CPU per request of every process, per alternating slice: the measure that holds on a noisy machine.
    for (const scenario of [report.baseline!, ...report.seckill, report.shopHot!.cached]) {
      expect(scenario.slices.length).toBeGreaterThanOrEqual(3);
      for (const part of ['server', 'generator', 'total'] as const) expect(scenario.saturation.cpuSpread?.[part].median).toBeGreaterThan(0);
      // Redis and MariaDB may cost less than one 10 ms tick in a short slice (the cached shop never
      // reaches Redis: the near cache answers), so per slice they are only required to be measured.
      for (const part of ['redis', 'mariadb'] as const) expect(scenario.saturation.cpuSpread?.[part].median).toBeGreaterThanOrEqual(0);
    }
    // The sale over RabbitMQ counts the broker's CPU beside the others (ticks of 10 ms: over the
    // whole sale, not per slice), and both async sales report their orders' lag to MySQL.
    const overBroker = report.seckill.find((sale) => sale.scenario === 'seckill-rabbitmq')!;
    expect(overBroker.slices.reduce((sum, slice) => sum + slice.cpu!.broker * slice.requests, 0)).toBeGreaterThan(0);
    // In a world of its own, the RabbitMQ sale's server wrote every order it accepted; the stream
    // sale's worker shares its streams with the sync server's, which may write some of them.
    expect(overBroker.writeLag?.count).toBe(overBroker.accepted);
    for (const sale of report.seckill.filter((sale) => sale.strategy === 'async')) {
      expect(sale.writeLag?.count, sale.scenario).toBeGreaterThan(0);
      expect(sale.writeLag!.count).toBeLessThanOrEqual(sale.accepted);
      expect(sale.writeLag!.p99).toBeGreaterThanOrEqual(sale.writeLag!.p50);
    }
    // Every order runs reserve.lua: over the whole sale Redis's CPU shows.
    for (const sale of report.seckill) {
      expect(sale.slices.reduce((sum, slice) => sum + slice.cpu!.redis * slice.requests, 0)).toBeGreaterThan(0);
    }
    // Redis work per accepted order, counted over the slices (bench/harness/redis-work.ts): every order runs at least one script.
    for (const sale of report.seckill) {
      const work = sale.work!;
      expect(work.accepted, sale.scenario).toBeGreaterThan(0);
      expect(work.scriptsPerOrder, sale.scenario).toBeGreaterThan(0);
      expect(Number.isFinite(work.scriptsPerOrder)).toBe(true);
      expect(work.commandsPerOrder, sale.scenario).toBeGreaterThan(work.scriptsPerOrder);
      expect(Number.isFinite(work.commandsPerOrder)).toBe(true);
      expect(work.byCommand.evalsha, sale.scenario).toBeGreaterThan(0);
      for (const part of ['server', 'total'] as const) expect(work.cpuPerOrder[part], `${sale.scenario} ${part}`).toBeGreaterThan(0);
      // The server's reserve batch histogram, where it has one.
      if (work.meanReserveBatch !== null) expect(work.meanReserveBatch).toBeGreaterThanOrEqual(1);
      // Every scenario's worker reads the one set of streams: the async server's may have written none of them.
      if (work.ordersPerWorkerWrite !== null) expect(work.ordersPerWorkerWrite).toBeGreaterThan(0);
    }
    // The async worker writes MariaDB: over the whole sale its CPU shows (ticks of 10 ms: not in every short slice).
    const asyncSale = report.seckill.find((sale) => sale.strategy === 'async')!;
    expect(asyncSale.slices.reduce((sum, slice) => sum + slice.cpu!.mariadb * slice.requests, 0)).toBeGreaterThan(0);
    expect(report.targets.map((target) => target.name)).toEqual([
      'seckill-async / baseline, req/s',
      'seckill-async / baseline, CPU µs per request',
      'seckill-async / seckill-sync, req/s',
      'seckill-sync / seckill-async, CPU µs per request',
      'seckill-async p99 / baseline p99, same offered rate',
      'shop-hot / its bare in-memory route, req/s',
      'shop-hot / its bare route, CPU µs per request',
    ]);
    expect(report.targets.filter((target) => target.spread).every((target) => target.verdict === 'met' || /^missed by \d+ %$/.test(target.verdict))).toBe(true);

    // The baseline is measured at the order's offered rate too, and the p99 target compares the two.
    expect(report.baseline!.matchedRate!.offeredRate).toBe(asyncSale.fixedRate.offeredRate);
    expect(report.baseline!.matchedRate!.requests).toBeGreaterThan(0);
    expect(report.targets.find((target) => target.name.startsWith('seckill-async p99'))!.measured).toMatch(/^[\d.]+× \(/);

    const markdown = renderMarkdown(report);
    expect(markdown).toContain("| baseline at the order's rate |");
    expect(markdown).toContain('| seckill-async |');
    expect(markdown).toMatch(/\| seckill-async \| [\d,]+ \| [\d,.]+ \| [\d,.]+ \| (—|[\d,.]+) \| (—|[\d,.]+) \| [\d,.]+ \|/); // per accepted order: commands, scripts, batches, server µs
    expect(markdown).toContain('PASS orders in MySQL = successes returned');
    expect(markdown).toContain('Correctness: **PASS**');
    expect(markdown).toMatch(/\| seckill-async \| [\d,.]+ \([\d,.]+–[\d,.]+\) \| [\d,.]+ \(/); // req/s and server µs with their spread
    const svg = renderSvg(report);
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg.match(/<rect /g)?.length).toBe(1 + 2 * 6); // background + two bars per HTTP row
  });
});

/**
 * The shop read at each level (bench/scenarios/edge-shop.ts), in a smoke run of their own: they are
 * not in the default set (each starts an app, the edge's an nginx too). Only that they run and
 * report: never their rates or the targets' verdicts.
 */
describe('npm run bench --scenarios shop-hot,shop-redis,edge-shop-l1,edge-shop-l2 --smoke', () => {
  const LEVELS = 'shop-hot,shop-redis,edge-shop-l1,edge-shop-l2';

  it('runs them only when named', () => {
    expect(smokeOptions().scenarios).not.toEqual(expect.arrayContaining(['shop-redis']));
    expect(smokeOptions().scenarios.filter((name) => name.startsWith('edge-'))).toEqual([]);
    expect(smokeOptions('--scenarios', LEVELS).scenarios).toEqual(['shop-hot', 'shop-redis', 'edge-shop-l1', 'edge-shop-l2']);
    expect(() => parseBenchOptions(['--target', 'http://127.0.0.1:1', '--scenarios', 'edge-shop-l1'], {})).toThrow(/edge-shop-l1 need/);
  });

  it("measures the shop read at each level, nginx's CPU counted with the serving processes", { timeout: 180_000 }, async () => {
    const report = await runBench(smokeOptions('--scenarios', LEVELS), quiet);

    const { l1, l2 } = report.edgeShop ?? {};
    for (const result of [report.shopHot?.cached, report.shopRedis, l1, l2]) {
      expect(result?.saturation.rps).toBeGreaterThan(0);
      expect(result!.slices.length).toBeGreaterThanOrEqual(3);
      expect(result!.saturation.errors + result!.fixedRate.errors).toBe(0);
      expect(result!.saturation.non2xx + result!.fixedRate.non2xx).toBe(0);
      expect(result!.saturation.cpuSpread?.total.median).toBeGreaterThan(0);
      expect(result!.saturation.generator).toBe('wrk');
    }
    // nginx's ticks (10 ms) over all slices: only the edge's targets count one.
    const nginxMicros = (result: NonNullable<typeof l1>) => result.slices.reduce((sum, slice) => sum + slice.cpu!.nginx * slice.requests, 0);
    expect(nginxMicros(l1!)).toBeGreaterThan(0);
    expect(nginxMicros(l2!)).toBeGreaterThan(0);
    expect(report.shopRedis!.slices.every((slice) => slice.cpu!.nginx === 0)).toBe(true);
    for (const edge of [l1!, l2!]) {
      expect(edge.reachedApp).toBeGreaterThanOrEqual(0);
      expect(edge.measuredRequests).toBeGreaterThan(0);
    }

    expect(report.targets.map((target) => target.name)).toEqual([
      'shop-hot / its bare in-memory route, req/s',
      'shop-hot / its bare route, CPU µs per request',
      'shop-hot / edge-shop-l1, serving CPU µs per request',
      'shop-redis / edge-shop-l2, serving CPU µs per request',
    ]);
    expect(report.targets.every((target) => target.verdict === 'met' || /^missed by \d+ %$/.test(target.verdict))).toBe(true);

    const markdown = renderMarkdown(report);
    expect(markdown).toContain('| scenario | req/s per slice | server | redis | mariadb | broker | nginx | generator | serving |');
    expect(markdown).toMatch(
      /\| edge-shop-l1 \| the edge's L1 \(nginx shared dict\) \| [\d,.]+ \([\d,.]+–[\d,.]+\) \| [\d,.]+ \([\d,.]+–[\d,.]+\) \| [\d,.]+× \(/,
    );
    expect(markdown).toMatch(/\| edge-shop-l2 \| .* \| [\d,]+ of [\d,]+ \|/);
    expect(markdown).toContain('Saturation by wrk for shop-hot, shop-hot bare route, shop-redis, edge-shop-l1, edge-shop-l2, whose answers change nothing');
  });
});

describe('sale checks', () => {
  let world: World;
  let sale: Sale;
  let vouchers: string[];
  const stock = 5;

  beforeAll(async () => {
    world = await createOwnWorld({ redisUrl: testRedisUrl(), mysqlServerUrl: testMysqlUrl(), users: 3 });
    sale = world.sale;
    vouchers = await world.createVouchers(2, stock);
  });

  afterAll(async () => {
    await world?.destroy();
  });

  it('pass on a consistent sale and fail, each for its own reason, on a broken one', async () => {
    const [first, second] = [vouchers[0]!, vouchers[1]!];
    const [alice, bob] = [world.users[0]!, world.users[1]!];
    // A correct sale of one unit: Redis reserved it, the worker wrote it, stock agrees.
    await placeInRedisAndMysql('1001', alice.id, first);
    const accepted = new Set(['1001']);
    const consistent = await checkSale(world, 'async', vouchers, stock, { accepted });
    expect(consistent.filter((check) => !check.pass)).toEqual([]);

    // Lost: answered success, never reached MySQL. Drift: Redis took a unit MySQL did not.
    accepted.add('1002');
    await sale.batches.reserve({ orderId: '1002', userId: bob.id, voucherId: second });
    // A dead letter and an entry read but never acknowledged.
    const { deadLetters, stream } = sale.keys.shard(0);
    await world.redis.xadd(deadLetters, '*', 'orderId', '9', 'error', 'poison');
    await world.stream.ensureGroup(0);
    await world.redis.xadd(stream, '*', 'orderId', '10');
    await world.redis.xreadgroup('GROUP', ORDER_GROUP, 'test', 'COUNT', 100, 'STREAMS', stream, '>');

    const broken = await checkSale(world, 'async', vouchers, stock, { accepted });
    expect(broken.filter((check) => !check.pass).map((check) => check.name)).toEqual([
      'orders in MySQL = successes returned',
      'MySQL stock = Redis stock',
      'nothing pending',
      'no dead letters',
    ]);
    expect(broken.find((check) => check.name === 'orders in MySQL = successes returned')?.detail).toContain('1 answered but missing');
  });

  async function placeInRedisAndMysql(orderId: string, userId: string, voucherId: string) {
    expect(await sale.batches.reserve({ orderId, userId, voucherId })).toMatchObject({ outcome: 'accepted', slot: 1 });
    await world.db.insertInto('tb_voucher_order').values({ id: orderId, user_id: userId, voucher_id: voucherId }).execute();
    await world.db
      .updateTable('tb_seckill_voucher')
      .set((eb) => ({ stock: eb('stock', '-', 1) }))
      .where('voucher_id', '=', voucherId)
      .execute();
    // The worker's acknowledgement: the order is no longer queued.
    for (let shard = 0; shard < sale.keys.shards; shard++) await world.redis.hdel(sale.keys.shard(shard).queued, orderId);
  }
});

describe('npm run bench --target (the command line)', () => {
  let env: TestEnv;
  let server: ChildProcess | undefined;

  beforeAll(async () => {
    env = await createTestEnv();
  });

  afterAll(async () => {
    if (server && server.exitCode === null) {
      server.kill('SIGTERM');
      await once(server, 'exit');
    }
    await env?.cleanup();
  });

  it('loads a running deployment, exits 0 with a JSON report of its passing sale and leaves its data as it found it', { timeout: 240_000 }, async () => {
    const port = await freePort();
    const serverEnv = { MYSQL_URL: env.mysqlUrl, REDIS_URL: testRedisUrl(), REDIS_KEY_PREFIX: env.keyPrefix, SECKILL_STREAM_SHARDS: '2', PORT: String(port) };
    server = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: {
        ...productionServerEnv('warn'),
        ...serverEnv,
      },
      stdio: 'ignore',
    });
    await eventually(async () => expect((await fetch(`http://127.0.0.1:${port}/api/health`)).status).toBe(200), 60_000);
    // Someone else's data in the same database, which the run must not touch.
    const [other] = await createUsersWithSessions(env, 1, 13_800_000_000);
    const before = await rowCounts(env);

    // The harness reads the deployment's configuration from its environment, as an operator's shell would give it.
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'bench/run.ts', '--smoke', '--json', '--target', `http://127.0.0.1:${port}`], {
      env: { ...process.env, ...serverEnv, NODE_ENV: 'test' },
      maxBuffer: 16 * 1024 * 1024,
    });
    const report = JSON.parse(stdout) as { pass: boolean; seckill: Array<{ scenario: string; pass: boolean; accepted: number }> };
    expect(report.pass).toBe(true);
    expect(report.seckill.map((sale) => [sale.scenario, sale.pass])).toEqual([['seckill-async', true]]);
    expect(report.seckill[0]!.accepted).toBeGreaterThan(0);
    expect(await rowCounts(env)).toEqual(before);
    expect(await env.db.selectFrom('tb_user').select('id').where('id', '=', other!.id).executeTakeFirst()).toBeDefined();
  });

  it('refuses scenarios that need a server of its own', () => {
    expect(() => parseBenchOptions(['--target', 'http://127.0.0.1:1', '--scenarios', 'baseline,seckill-async'], {})).toThrow(/baseline need the bench routes/);
    expect(() => parseBenchOptions(['--target', 'ftp://x'], {})).toThrow(/expected an http/);
  });

  it("sets the servers' log level: warn by default, info on request, nothing else", () => {
    expect(smokeOptions().logLevel).toBe('warn');
    expect(smokeOptions('--log-level', 'info').logLevel).toBe('info');
    expect(() => parseBenchOptions(['--log-level', 'debug'], {})).toThrow(/--log-level: debug is not one of warn, info/);
  });

  it('refuses a bad option with exit code 2 and a message naming it', async () => {
    const failure = await run(process.execPath, ['--import', 'tsx', 'bench/run.ts', '--users', 'many']).then(
      () => null,
      (error: unknown) => error as { code: number; stderr: string },
    );
    expect(failure?.code).toBe(2);
    expect(failure?.stderr).toContain('--users: expected a number from 1 to 1000000, got "many"');
  });
});

async function rowCounts(env: TestEnv): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of ['tb_user', 'tb_shop', 'tb_voucher', 'tb_seckill_voucher', 'tb_voucher_order'] as const) {
    const row = await env.db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    counts[table] = Number(row.n);
  }
  return counts;
}
