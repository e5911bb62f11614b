/**
 * `npm run bench -- growth`: how the cost grows with what the app holds (docs/bench-growth.md).
 *
 * - sessions: Redis memory per login session at 10k, 100k and 1M sessions;
 * - buyers: Redis memory per buyer of one voucher at 10k and 1M buyers (with the order still
 *   queued for the worker, and after the worker took it);
 * - sales: throughput and CPU per order with 1, 100 and 1,000 sales open at once;
 * - connections: p99 and server memory per connection at 100, 1,000 and 10,000 connections;
 * - feed: time to publish a blog to 10, 1,000 and 10,000 followers.
 *
 * The memory figures fill a redis-server started here on a free port (stopped by pid at the end)
 * with the app's own key formats (the modules' keys.ts, the sale's own script), and read
 * `used_memory` before and after. The HTTP figures use a bench world (bench/world.ts: its own
 * database, its own Redis) and bench servers, as `npm run bench` does.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { createRedis, closeRedis } from '../src/infra/redis.js';
import { buildSale, SaleKeys } from '../src/modules/seckill/index.js';
import { sessionKeyOfDigest, tokenDigest, userSessionsKey } from '../src/modules/users/index.js';
import { startRedisServer, type RedisServer } from '../kit/redis-servers.js';
import { formatSpread, mariadbPid, processRssBytes, redisPid, spreadOf, startCpuCount, type CpuPerRequest, type Spread } from './cpu.js';
import { fixedRate, saturate, type RequestSource } from './load.js';
import { startServer } from './processes.js';
import { panelsSvg, type Panel } from './svg-chart.js';
import { waitForDrain } from './seckill.js';
import { createOwnWorld, type BenchUser, type World } from './world.js';

const SECTIONS = ['sessions', 'buyers', 'sales', 'connections', 'feed'] as const;
type Section = (typeof SECTIONS)[number];

export const GROWTH_USAGE = `npm run bench -- growth [options]

  --only LIST        comma-separated, from: ${SECTIONS.join(', ')} (default: all; 6–10 min)
  --connection-rate N  offered req/s of the connections section (default 2000; lower on a busy machine)
  --quick            sizes ÷ 100 and short slices, writes nothing (a check that it runs)
  --no-write         do not update docs/bench-growth.md and docs/bench/growth.svg
  --docs-dir DIR     default docs
  --json             one JSON document on stdout

Environment: MYSQL_SERVER_URL (default mysql://root@127.0.0.1:3306). Redis: servers of its own.`;

interface MemoryRow {
  count: number;
  bytesPerItem: number;
}

interface SalesRow {
  sales: number;
  rps: Spread;
  cpu: Record<'server' | 'redis' | 'mariadb' | 'total', Spread>;
}

interface ConnectionsRow {
  connections: number;
  offeredRate: number;
  p50: number;
  p99: number;
  serverBytesPerConnection: number;
}

interface FeedRow {
  followers: number;
  ms: Spread;
}

export interface GrowthReport {
  startedAt: string;
  commandLine: string;
  loadAverage: string;
  sessions?: MemoryRow[];
  buyers?: Array<MemoryRow & { bytesPerQueuedOrder: number }>;
  sales?: SalesRow[];
  connections?: ConnectionsRow[];
  feed?: FeedRow[];
}

export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        only: { type: 'string' },
        'connection-rate': { type: 'string', default: '2000' },
        quick: { type: 'boolean', default: false },
        'no-write': { type: 'boolean', default: false },
        'docs-dir': { type: 'string' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
      strict: true,
    });
  } catch (error) {
    console.error(`bench growth: ${(error as Error).message}\n\n${GROWTH_USAGE}`);
    return 2;
  }
  const { values } = parsed;
  if (values.help) {
    console.log(GROWTH_USAGE);
    return 0;
  }
  const only = (values.only ?? SECTIONS.join(',')).split(',').map((name) => name.trim());
  const unknown = only.filter((name) => !(SECTIONS as readonly string[]).includes(name));
  if (unknown.length > 0) {
    console.error(`bench growth: unknown section ${unknown.join(', ')} (known: ${SECTIONS.join(', ')})`);
    return 2;
  }
  const connectionRate = Number(values['connection-rate']);
  if (!Number.isInteger(connectionRate) || connectionRate < 1) {
    console.error(`bench growth: --connection-rate: expected a whole number above 0, got "${values['connection-rate']}"`);
    return 2;
  }
  const report = await runGrowth(only as Section[], values.quick, ['npm run bench -- growth', ...argv].join(' '), connectionRate);
  console.log(values.json ? JSON.stringify(report, null, 2) : renderGrowth(report));
  if (!values['no-write'] && !values.quick) {
    const docsDir = values['docs-dir'] ?? 'docs';
    await writeGrowthDocs(report, docsDir);
    console.error(`wrote ${join(docsDir, 'bench-growth.md')} and ${join(docsDir, 'bench', 'growth.svg')}`);
  }
  return 0;
}

async function loadAverage(): Promise<string> {
  return (await readFile('/proc/loadavg', 'utf8').catch(() => '?')).split(' ').slice(0, 3).join(' ');
}

export async function runGrowth(sections: Section[], quick: boolean, commandLine: string, connectionRate = 2_000): Promise<GrowthReport> {
  const scale = (n: number) => (quick ? Math.max(10, Math.round(n / 100)) : n);
  const report: GrowthReport = { startedAt: new Date().toISOString(), commandLine, loadAverage: await loadAverage() };
  const say = (text: string) => process.stderr.write(`[growth] ${text}\n`);
  if (sections.includes('sessions')) {
    say('sessions');
    report.sessions = await withOwnRedis((redis) => sessionMemory(redis, [10_000, 100_000, 1_000_000].map(scale)));
  }
  if (sections.includes('buyers')) {
    say('buyers');
    report.buyers = await withOwnRedis((_redis, server) => buyerMemory(server, [10_000, 1_000_000].map(scale)));
  }
  const http = sections.filter((section) => section === 'sales' || section === 'connections' || section === 'feed');
  if (http.length > 0) {
    const redisServer = await startRedisServer();
    const users = quick ? 1_200 : 15_000;
    say(`a bench world of ${users} users`);
    const world = await createOwnWorld({
      redisUrl: redisServer.url,
      mysqlServerUrl: (process.env.MYSQL_SERVER_URL ?? 'mysql://root@127.0.0.1:3306').replace(/\/$/, ''),
      users,
      name: `hmdp_growth_${process.pid}`,
    }).catch(async (error: unknown) => {
      await redisServer.kill();
      throw error;
    });
    try {
      if (http.includes('sales')) {
        say('sales open at once');
        report.sales = await salesAtOnce(world, quick ? [1, 10, 100] : [1, 100, 1_000], quick ? 300 : 4_000, quick ? 200 : 1_500);
      }
      if (http.includes('connections')) {
        say('connections');
        report.connections = await connectionCost(
          world,
          [100, 1_000, 10_000].map((n) => (quick ? n / 10 : n)),
          quick ? 500 : connectionRate,
          Math.max(6, Math.ceil(10_000 / connectionRate)),
        );
      }
      if (http.includes('feed')) {
        say('feed');
        report.feed = await feedPublish(
          world,
          [10, 1_000, 10_000].map((n) => (quick ? Math.max(5, n / 100) : n)),
        );
      }
    } finally {
      await world.destroy();
      await redisServer.kill();
    }
  }
  report.loadAverage += ` → ${await loadAverage()}`;
  return report;
}

async function withOwnRedis<T>(use: (redis: Redis, server: RedisServer) => Promise<T>): Promise<T> {
  const server = await startRedisServer();
  const redis = new Redis(server.url);
  try {
    return await use(redis, server);
  } finally {
    redis.disconnect();
    await server.kill();
  }
}

async function usedMemory(redis: Pick<Redis, 'info'>): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]);
}

/** Sessions as SessionStore.create writes them: the session hash and the user's index of sessions, each with its TTL. */
async function sessionMemory(redis: Redis, sizes: number[]): Promise<MemoryRow[]> {
  const rows: MemoryRow[] = [];
  const deadline = Date.now() + 12 * 3600_000;
  for (const count of sizes) {
    await redis.flushall();
    const before = await usedMemory(redis);
    for (let start = 0; start < count; start += 5_000) {
      const pipeline = redis.pipeline();
      for (let k = start; k < Math.min(count, start + 5_000); k++) {
        const digest = tokenDigest(randomBytes(32).toString('base64url'));
        const userId = String(1_000_000 + k);
        const key = sessionKeyOfDigest(digest);
        // hmdp's default nick name: "user_" and ten random characters.
        pipeline.hset(key, { id: userId, nickName: `user_${randomBytes(8).toString('base64url').slice(0, 10)}`, icon: '', role: 'user', deadline });
        pipeline.expire(key, 1800);
        pipeline.sadd(userSessionsKey(userId), digest);
        pipeline.expire(userSessionsKey(userId), 12 * 3600);
      }
      await pipeline.exec();
    }
    rows.push({ count, bytesPerItem: Math.round(((await usedMemory(redis)) - before) / count) });
  }
  return rows;
}

/** Buyers of one voucher through the sale's own reserve.lua, then with the worker's part done (stream and queue emptied). */
async function buyerMemory(server: RedisServer, sizes: number[]): Promise<Array<MemoryRow & { bytesPerQueuedOrder: number }>> {
  const client = createRedis({ redisUrl: server.url, redisClusterNodes: [], redisKeyPrefix: '' });
  const keys = new SaleKeys(4);
  const sale = buildSale(client, keys);
  const rows: Array<MemoryRow & { bytesPerQueuedOrder: number }> = [];
  try {
    for (const [i, count] of sizes.entries()) {
      await client.flushall();
      const voucherId = String(1_000 + i);
      const begin = new Date(Date.now() - 60_000);
      await sale.publisher.publish({ voucherId, stock: count, begin, end: new Date(begin.getTime() + 6 * 3600_000) });
      const before = await usedMemory(client);
      for (let start = 0; start < count; start += 5_000) {
        const batch = Array.from({ length: Math.min(5_000, count - start) }, (_, j) => start + j);
        // Order ids as the id generator makes them: 19 digits.
        await Promise.all(
          batch.map((k) => sale.batches.reserve({ orderId: String(7_000_000_000_000_000_000n + BigInt(k)), userId: String(1_000 + k), voucherId })),
        );
      }
      const queued = await usedMemory(client);
      const { stream, queued: queue } = keys.voucher(voucherId);
      await client.del(stream, queue);
      const taken = await usedMemory(client);
      rows.push({ count, bytesPerItem: Math.round((taken - before) / count), bytesPerQueuedOrder: Math.round((queued - before) / count) });
    }
  } finally {
    await closeRedis(client);
  }
  return rows;
}

/**
 * Every request a new order: request i is user u = i mod U buying voucher (u + ⌊i / U⌋) mod N,
 * so consecutive requests spread over all N sales, each user asks about once every U requests
 * (far under the per-user limit) and no pair repeats while i < U × N.
 */
class SpreadSale implements RequestSource {
  readonly method = 'POST' as const;
  private index = 0;
  failures = 0;
  constructor(
    private readonly vouchers: readonly string[],
    private readonly users: readonly BenchUser[],
  ) {}
  next() {
    const u = this.index % this.users.length;
    const voucher = this.vouchers[(u + Math.floor(this.index / this.users.length)) % this.vouchers.length]!;
    this.index += 1;
    return { path: `/api/voucher-order/seckill/${voucher}`, headers: { authorization: this.users[u]!.token } };
  }
  onResponse(_status: number, body: string): void {
    if (!body.startsWith('{"success":true')) this.failures += 1;
  }
}

async function salesAtOnce(world: World, counts: number[], sliceRequests: number, warmUpRequests: number): Promise<SalesRow[]> {
  const server = await startServer({ env: { ...world.env, SECKILL_STRATEGY: 'async', SECKILL_WORKER: 'true', SECKILL_CONSUMER: 'bench-growth' } });
  try {
    const pids = { server: server.child.pid, redis: await redisPid(world.redis), mariadb: await mariadbPid(world.db) };
    const sources = new Map<number, SpreadSale>();
    for (const count of counts) sources.set(count, new SpreadSale(await world.createVouchers(count, world.users.length), world.users));
    const load = (source: SpreadSale, requests: number) => saturate(server.url, source, { connections: 100, durationSeconds: 1, expectedRps: requests });
    for (const source of sources.values()) await load(source, warmUpRequests);
    const slices = new Map<number, Array<{ rps: number; cpu: CpuPerRequest }>>(counts.map((count) => [count, []]));
    // Alternating slices (1, 100, 1000, 1, 100, 1000, …): drift of the machine weighs on each alike.
    for (let round = 0; round < 3; round++) {
      for (const [count, source] of sources) {
        const cpu = startCpuCount(pids);
        const phase = await load(source, sliceRequests);
        slices.get(count)!.push({ rps: phase.rps, cpu: cpu(phase.requests) });
      }
    }
    await waitForDrain(world, 120_000);
    for (const [count, source] of sources) if (source.failures > 0) throw new Error(`sales ×${count}: ${source.failures} orders were not accepted`);
    return counts.map((sales) => {
      const measured = slices.get(sales)!;
      const cpu = (part: keyof CpuPerRequest) => spreadOf(measured.map((slice) => slice.cpu[part]));
      return {
        sales,
        rps: spreadOf(measured.map((slice) => slice.rps)),
        cpu: { server: cpu('server'), redis: cpu('redis'), mariadb: cpu('mariadb'), total: cpu('total') },
      };
    });
  } finally {
    await server.stop();
  }
}

/** The baseline route (one EVALSHA) at a fixed rate over N open connections; the server's resident memory with them open. */
async function connectionCost(world: World, counts: number[], rate: number, seconds: number): Promise<ConnectionsRow[]> {
  const server = await startServer({ env: { ...world.env, SECKILL_WORKER: 'false' } });
  const rows: ConnectionsRow[] = [];
  try {
    const pid = server.child.pid!;
    const source: RequestSource = { method: 'POST', next: () => ({ path: '/bench/evalsha' }) };
    await saturate(server.url, source, { connections: 100, durationSeconds: 1, expectedRps: 3_000 }); // warm-up
    for (const connections of counts) {
      // One rate for every count, well under saturation; at least one request per connection.
      if (rate * seconds < connections) throw new Error(`connections: ${rate} req/s over ${seconds} s cannot reach ${connections} connections`);
      const before = processRssBytes(pid);
      let open = Number.NaN;
      const phase = await fixedRate(server.url, source, { rate, connections, durationSeconds: seconds, onStart: () => (open = processRssBytes(pid)) });
      if (phase.errors > 0) throw new Error(`${connections} connections: ${phase.errors} requests failed (is ulimit -n above ${connections + 100}?)`);
      rows.push({
        connections,
        offeredRate: rate,
        p50: phase.latency.p50,
        p99: phase.latency.p99,
        serverBytesPerConnection: Math.round((open - before) / connections),
      });
    }
  } finally {
    await server.stop();
  }
  return rows;
}

/** Authors with 10, 1,000 and 10,000 followers in tb_follow; each publishes three blogs through POST /api/blog. */
async function feedPublish(world: World, followerCounts: number[]): Promise<FeedRow[]> {
  const needed = followerCounts.length + Math.max(...followerCounts);
  if (world.users.length < needed) throw new Error(`feed: ${needed} users needed, the world has ${world.users.length}`);
  const server = await startServer({ env: { ...world.env, SECKILL_WORKER: 'false', WRITE_LIMIT_BLOGS_PER_HOUR: '0' } });
  const rows: FeedRow[] = [];
  try {
    const followers = world.users.slice(followerCounts.length);
    for (const [i, count] of followerCounts.entries()) {
      const author = world.users[i]!;
      for (let start = 0; start < count; start += 1_000) {
        const batch = followers.slice(start, Math.min(count, start + 1_000)).map((follower) => ({ user_id: follower.id, follow_user_id: author.id }));
        await world.db.insertInto('tb_follow').values(batch).execute();
      }
      const times: number[] = [];
      for (let blog = 0; blog < 4; blog++) {
        const started = performance.now();
        const response = await fetch(`${server.url}/api/blog`, {
          method: 'POST',
          headers: { authorization: author.token, 'content-type': 'application/json' },
          body: JSON.stringify({ shopId: world.shopId, title: `Growth ${count} #${blog}`, content: 'Noodles worth the queue.' }),
        });
        const body = await response.text();
        if (!body.startsWith('{"success":true')) throw new Error(`POST /api/blog answered ${response.status}: ${body.slice(0, 200)}`);
        if (blog > 0) times.push(performance.now() - started); // the first one warms the route up
      }
      rows.push({ followers: count, ms: spreadOf(times) });
    }
  } finally {
    await server.stop();
  }
  return rows;
}

const n = (value: number) => value.toLocaleString('en-US');

export function renderGrowth(report: GrowthReport): string {
  const out: string[] = [
    `Run of ${report.startedAt.slice(0, 16).replace('T', ' ')} UTC: \`${report.commandLine}\`; load average ${report.loadAverage} (1, 5, 15 min; start → end).`,
    '',
  ];
  if (report.sessions) {
    out.push('| sessions | Redis bytes per session |', '|---:|---:|', ...report.sessions.map((row) => `| ${n(row.count)} | ${n(row.bytesPerItem)} |`), '');
  }
  if (report.buyers) {
    out.push(
      '| buyers of one voucher | bytes per buyer, order queued for the worker | bytes per buyer once written |',
      '|---:|---:|---:|',
      ...report.buyers.map((row) => `| ${n(row.count)} | ${n(row.bytesPerQueuedOrder)} | ${n(row.bytesPerItem)} |`),
      '',
    );
  }
  if (report.sales) {
    out.push(
      'Orders (every request a new order) at 100 connections; median (lowest–highest) of 3 alternating slices:',
      '',
      '| sales open | orders/s | server µs/order | Redis µs/order | MariaDB µs/order | serving µs/order |',
      '|---:|---:|---:|---:|---:|---:|',
      ...report.sales.map(
        (row) =>
          `| ${n(row.sales)} | ${formatSpread(row.rps)} | ${formatSpread(row.cpu.server)} | ${formatSpread(row.cpu.redis)} | ${formatSpread(row.cpu.mariadb)} | ${formatSpread(row.cpu.total)} |`,
      ),
      '',
    );
  }
  if (report.connections) {
    out.push(
      '| connections | offered req/s | p50 ms | p99 ms | server memory per connection |',
      '|---:|---:|---:|---:|---:|',
      ...report.connections.map(
        (row) => `| ${n(row.connections)} | ${n(row.offeredRate)} | ${row.p50} | ${row.p99} | ${n(Math.round(row.serverBytesPerConnection / 1024))} KiB |`,
      ),
      '',
    );
  }
  if (report.feed) {
    out.push(
      '| followers | ms to publish a blog (median, lowest–highest of 3) |',
      '|---:|---:|',
      ...report.feed.map((row) => `| ${n(row.followers)} | ${formatSpread(row.ms)} |`),
      '',
    );
  }
  return out.join('\n');
}

export function renderGrowthSvg(report: GrowthReport): string {
  const panels: Panel[] = [];
  if (report.sessions)
    panels.push({
      title: 'Redis bytes per session',
      bars: report.sessions.map((row) => ({ label: `${n(row.count)} sessions`, value: row.bytesPerItem, text: n(row.bytesPerItem) })),
    });
  if (report.buyers)
    panels.push({
      title: 'Redis bytes per buyer of one voucher (written / queued)',
      bars: report.buyers.flatMap((row) => [
        { label: `${n(row.count)} written`, value: row.bytesPerItem, text: n(row.bytesPerItem) },
        { label: `${n(row.count)} queued`, value: row.bytesPerQueuedOrder, text: n(row.bytesPerQueuedOrder) },
      ]),
    });
  if (report.sales) {
    panels.push({
      title: 'orders/s by sales open at once',
      bars: report.sales.map((row) => ({ label: `${n(row.sales)} sales`, value: row.rps.median, text: n(row.rps.median) })),
    });
    panels.push({
      title: 'CPU µs per order (server + Redis + MariaDB)',
      bars: report.sales.map((row) => ({ label: `${n(row.sales)} sales`, value: row.cpu.total.median, text: formatSpread(row.cpu.total) })),
    });
  }
  if (report.connections) {
    panels.push({
      title: 'p99 ms by open connections',
      bars: report.connections.map((row) => ({ label: `${n(row.connections)} conns`, value: row.p99, text: `${row.p99} ms` })),
    });
    panels.push({
      title: 'server KiB per connection',
      bars: report.connections.map((row) => ({
        label: `${n(row.connections)} conns`,
        value: row.serverBytesPerConnection / 1024,
        text: (row.serverBytesPerConnection / 1024).toFixed(1),
      })),
    });
  }
  if (report.feed)
    panels.push({
      title: 'ms to publish a blog by followers',
      bars: report.feed.map((row) => ({ label: n(row.followers), value: row.ms.median, text: formatSpread(row.ms) })),
    });
  return panelsSvg(`hmdp-ts: how cost grows, ${report.startedAt.slice(0, 10)}`, `${report.commandLine}; load average ${report.loadAverage}`, panels);
}

const BEGIN = '<!-- growth:generated:begin (written by npm run bench -- growth; edit outside these markers) -->';
const END = '<!-- growth:generated:end -->';

async function writeGrowthDocs(report: GrowthReport, docsDir: string): Promise<void> {
  const markdownPath = join(docsDir, 'bench-growth.md');
  const svgPath = join(docsDir, 'bench', 'growth.svg');
  await mkdir(dirname(svgPath), { recursive: true });
  await writeFile(svgPath, renderGrowthSvg(report));
  const existing = await readFile(markdownPath, 'utf8').catch(() => '# How cost grows\n');
  const generated = `${BEGIN}\n\n![how cost grows](bench/growth.svg)\n\n${renderGrowth(report)}\n${END}`;
  const start = existing.indexOf(BEGIN);
  const end = existing.indexOf(END);
  const next = start >= 0 && end > start ? existing.slice(0, start) + generated + existing.slice(end + END.length) : `${existing.trimEnd()}\n\n${generated}\n`;
  await writeFile(markdownPath, next);
}
