import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { render } from '../../../src/lib/messages/index.js';
import { loadConfig } from '../../../src/infra/config.js';
import { createDb, type Db } from '../../../src/infra/db.js';
import { closeRedis, createRedis, type RedisClient } from '../../../src/infra/redis.js';
import { SECKILL_MESSAGES } from '../../../src/modules/seckill/messages.js';
import { buildSale } from '../../../src/modules/seckill/sale/sale.js';
import { SaleKeys } from '../../../src/modules/seckill/keys.js';
import { eventually } from '../../support/eventually.js';
import { closeOrderStreams, openOrderStream } from '../../support/order-stream.js';
import { startBinlogMariadb, type BinlogMariadb } from '../../../kit/mariadb-binlog.js';
import { createUsersWithSessions, type TestEnv } from '../../support/test-env.js';
import { freeRange } from '../../../kit/ports.js';

/**
 * scripts/topology.sh end to end: nginx in front of three app instances (a sale pool of two, a site
 * pool of one), a Redis Cluster of 3 masters + 3 replicas, two order workers and two change
 * followers, on free ports of their own, and a private MariaDB writing a ROW binlog (kit), which the
 * followers need and the shared one may not have. Orders placed through nginx are served by the
 * sale's instances and land in MySQL exactly once; nginx sheds what is over its per-address limits
 * before the app sees it; a row changed by SQL reaches nginx's answers through the followers.
 */
const run = promisify(execFile);
const SHARDS = 4;
// The edge's limits for this topology (TOPOLOGY_EDGE_*): orders a second and burst per address,
// requests in flight on the sale's routes per address. 127.0.0.1 is exempt (the default); the
// limited clients below send from other loopback addresses (127.0.0.2...).
const ORDER_RATE = 5;
const ORDER_BURST = 10;
const SALE_CONN = 16;
const ORDER_ROUTE = '/api/voucher-order/seckill/:id';

let dir: string;
let env: Record<string, string>;
let httpPort: number;
let prometheusPort: number;
let workerMetricsBase: number;
let cdcBase: number;
let mariadb: BinlogMariadb | undefined;
let saleApps: number[];
let siteApp: number;
let db: Db | undefined;
let redis: RedisClient | undefined;
let nodes: string[];
const database = `hmdp_topo_${randomBytes(4).toString('hex')}`;

const topology = async (...args: string[]) => {
  try {
    return await run('bash', ['scripts/topology.sh', ...args], { env, timeout: 240_000, maxBuffer: 10 * 1024 * 1024 });
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`scripts/topology.sh ${args.join(' ')} failed:\n${failed.stdout ?? ''}${failed.stderr ?? ''}\n${failed.message}`, { cause: error });
  }
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hmdp-topology-'));
  const redisBase = await freeRange(6, [10_000]);
  const appBase = await freeRange(3, [], [redisBase]);
  httpPort = await freeRange(1, [], [redisBase, appBase]);
  workerMetricsBase = await freeRange(2, [], [redisBase, appBase, httpPort]);
  prometheusPort = await freeRange(1, [], [redisBase, appBase, httpPort, workerMetricsBase]);
  cdcBase = await freeRange(2, [], [redisBase, appBase, httpPort, workerMetricsBase, prometheusPort]);
  mariadb = await startBinlogMariadb({ database });
  nodes = Array.from({ length: 6 }, (_, i) => `127.0.0.1:${redisBase + i}`);
  saleApps = [appBase, appBase + 1];
  siteApp = appBase + 2;
  env = {
    ...(process.env as Record<string, string>),
    NODE_ENV: 'production',
    MYSQL_URL: `${mariadb.serverUrl}/unused`,
    TOPOLOGY_DIR: dir,
    TOPOLOGY_DB: database,
    TOPOLOGY_REDIS_BASE_PORT: String(redisBase),
    TOPOLOGY_APP_BASE_PORT: String(appBase),
    TOPOLOGY_HTTP_PORT: String(httpPort),
    TOPOLOGY_WORKER_METRICS_BASE_PORT: String(workerMetricsBase),
    TOPOLOGY_CDC_BASE_PORT: String(cdcBase),
    TOPOLOGY_PROMETHEUS: '1',
    TOPOLOGY_PROMETHEUS_PORT: String(prometheusPort),
    SECKILL_STREAM_SHARDS: String(SHARDS),
    TOPOLOGY_SALE_APPS: '2',
    TOPOLOGY_SITE_APPS: '1',
    TOPOLOGY_EDGE_ORDER_RATE: String(ORDER_RATE),
    TOPOLOGY_EDGE_ORDER_BURST: String(ORDER_BURST),
    TOPOLOGY_EDGE_SALE_CONN: String(SALE_CONN),
    LOG_LEVEL: 'warn',
  };
  delete env.TOPOLOGY_EDGE_EXEMPT; // the default: 127.0.0.1
  await buildDist();
  await topology('up');
  db = createDb({ mysqlUrl: mariadb.mysqlUrl, poolSize: 2 });
  redis = createRedis({ redisUrl: 'redis://unused', redisClusterNodes: nodes.slice(0, 3), redisKeyPrefix: '' });
}, 300_000);

afterAll(async () => {
  await db?.destroy();
  if (redis) await closeRedis(redis);
  if (env) await topology('down', '--purge');
  await mariadb?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}, 120_000);

describe('scripts/topology.sh', () => {
  it('reports every part running', async () => {
    const { stdout } = await topology('status');
    expect(stdout.match(/role:master/g)).toHaveLength(3);
    expect(stdout.match(/role:slave/g)).toHaveLength(3);
    expect(stdout).toContain('cluster_state:ok');
    expect(stdout.match(/healthy/g)).toHaveLength(3);
    expect(stdout.match(/app :\d+ \(sale\)/g)).toHaveLength(2);
    expect(stdout.match(/app :\d+ \(site\)/g)).toHaveLength(1);
    expect(stdout.match(/consumer topology-worker-\d/g)).toHaveLength(2);
    expect(stdout.match(/change follower \d\s+pid \d+, (active|standby), /g)).toHaveLength(2);
    expect(stdout).toMatch(/nginx\s+pid \d+/);
    expect(stdout).toMatch(/prometheus\s+pid \d+/);
  });

  it('starts a Prometheus that scrapes every app instance, order worker and change follower and evaluates ops/prometheus/alerts.yml and cdc-alerts.yml', async () => {
    const api = async <T>(path: string) => ((await (await fetch(`http://127.0.0.1:${prometheusPort}/api/v1/${path}`)).json()) as { data: T }).data;
    await eventually(async () => {
      const { activeTargets } = await api<{ activeTargets: Array<{ scrapeUrl: string; health: string }> }>('targets');
      // Three app instances, two order workers, two change followers.
      expect(activeTargets.map((target) => target.health)).toEqual(['up', 'up', 'up', 'up', 'up', 'up', 'up']);
    }, 30_000);
    const { groups } = await api<{ groups: Array<{ rules: Array<{ name: string; health: string }> }> }>('rules');
    const rules = groups.flatMap((group) => group.rules);
    expect(rules.map((rule) => rule.name)).toEqual(expect.arrayContaining(['HmdpDeadLetters', 'HmdpCdcNoActiveFollower']));
    expect(rules.every((rule) => rule.health === 'ok')).toBe(true);
    // The workers' own series, from their WORKER_METRICS_PORT.
    const breaker = await api<{ result: unknown[] }>(
      `query?query=${encodeURIComponent(`seckill_worker_breaker_state{state="closed",instance=~".*:(${workerMetricsBase}|${workerMetricsBase + 1})"}`)}`,
    );
    expect(breaker.result).toHaveLength(2);
    // Exactly one change follower follows, by their own series.
    await eventually(async () => {
      const active = await api<{ result: Array<{ value: [number, string] }> }>(`query?query=${encodeURIComponent('sum(cdc_active{job="hmdp-cdc"})')}`);
      expect(active.result.map((sample) => sample.value[1])).toEqual(['1']);
    }, 30_000);
  });

  it('runs two change followers, one active and one standing by, that bring a shop changed by SQL to what nginx answers', async () => {
    const roles = async () =>
      Promise.all([cdcBase, cdcBase + 1].map(async (port) => ((await (await fetch(`http://127.0.0.1:${port}/api/health`)).json()) as { role: string }).role));
    await eventually(async () => expect((await roles()).sort()).toEqual(['active', 'standby']), 30_000);
    const shop = async () => {
      const response = await fetch(`http://127.0.0.1:${httpPort}/api/shop/2`);
      return { upstream: response.headers.get('x-upstream'), name: ((await response.json()) as { data: { name: string } }).data.name };
    };
    // Cached in the Cluster and answered by the edge itself before the write.
    await eventually(async () => expect((await shop()).upstream).toBeNull());
    await db!.updateTable('tb_shop').set({ name: 'renamed by SQL in the topology' }).where('id', '=', '2').execute();
    await eventually(async () => expect((await shop()).name).toBe('renamed by SQL in the topology'), 10_000);
  });

  it('serves the front end and the API through nginx; /metrics stays off it', async () => {
    const page = await fetch(`http://127.0.0.1:${httpPort}/shop/1`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="app"');
    expect((await fetch(`http://127.0.0.1:${httpPort}/metrics`)).status).toBe(404);
    const types = await fetch(`http://127.0.0.1:${httpPort}/api/shop-type/list`);
    const body = await types.text();
    expect((JSON.parse(body) as { success: boolean }).success).toBe(true);
    // Once the app has cached the list in the Cluster, the edge answers it from there (no upstream).
    await eventually(async () => {
      const again = await fetch(`http://127.0.0.1:${httpPort}/api/shop-type/list`);
      expect({ upstream: again.headers.get('x-upstream'), body: await again.text() }).toEqual({ upstream: null, body });
    });
    const shops = await fetch(`http://127.0.0.1:${httpPort}/api/shop/of/type?typeId=1&current=1`);
    expect(shops.status).toBe(200);
    expect(shops.headers.get('x-upstream')).toBe(`127.0.0.1:${siteApp}`); // the site's pool
  });

  it('sells through nginx across the instances: every accepted order in MySQL once, none oversold', async () => {
    const stock = 40;
    const voucherId = await insertVoucher(stock);
    const config = loadConfig({ NODE_ENV: 'test' });
    const users = await createUsersWithSessions({ db: db!, redis: redis!, config } as TestEnv, 80, 16_000_000_000);
    const responses = await Promise.all(
      users.map((user) =>
        fetch(`http://127.0.0.1:${httpPort}/api/voucher-order/seckill/${voucherId}`, { method: 'POST', headers: { authorization: user.token } }),
      ),
    );
    const upstreams = new Set(responses.map((response) => response.headers.get('x-upstream')));
    // Both instances of the sale's pool, none of the site's.
    expect([...upstreams].sort()).toEqual(saleApps.map((port) => `127.0.0.1:${port}`).sort());
    const bodies = await Promise.all(responses.map((response) => response.json() as Promise<{ success: boolean; data?: string; errorMsg?: string }>));
    const accepted = bodies.filter((body) => body.success).map((body) => body.data!);
    expect(accepted).toHaveLength(stock);
    expect(bodies.filter((body) => !body.success).every((body) => body.errorMsg === SECKILL_MESSAGES.soldOut.texts.zh)).toBe(true); // no Accept-Language: Chinese

    await eventually(async () => {
      const orders = await db!.selectFrom('tb_voucher_order').select(['id', 'user_id']).where('voucher_id', '=', voucherId).execute();
      expect(orders).toHaveLength(stock);
    }, 30_000);
    const orders = await db!.selectFrom('tb_voucher_order').select(['id', 'user_id']).where('voucher_id', '=', voucherId).execute();
    expect(new Set(orders.map((order) => order.id))).toEqual(new Set(accepted));
    expect(new Set(orders.map((order) => order.user_id)).size).toBe(stock);
    const row = await db!.selectFrom('tb_seckill_voucher').select('stock').where('voucher_id', '=', voucherId).executeTakeFirstOrThrow();
    expect(row.stock).toBe(0);
    expect((await buildSale(redis!, new SaleKeys(SHARDS)).reads.read(voucherId))?.stock).toBe(0);
  });

  it("pushes an order's states through nginx unbuffered (SSE): the current one at once, then paid, then the stream ends", async () => {
    const voucherId = await insertVoucher(5);
    const [user] = await createUsersWithSessions({ db: db!, redis: redis!, config: loadConfig({ NODE_ENV: 'test' }) } as TestEnv, 1, 16_100_000_000);
    const base = `http://127.0.0.1:${httpPort}`;
    const headers = { authorization: user!.token };
    const placed = (await (await fetch(`${base}/api/voucher-order/seckill/${voucherId}`, { method: 'POST', headers })).json()) as { data: string };
    const stream = await openOrderStream(base, placed.data, user!.token);
    expect(stream.status).toBe(200);
    // Arrives while the stream is still open: nginx passes events on, it does not hold them to the end.
    await stream.waitFor('created', 30_000);
    expect((await fetch(`${base}/api/voucher-order/${placed.data}/pay`, { method: 'POST', headers })).status).toBe(200);
    await stream.waitFor('paid');
    await stream.ended;
    expect(stream.states.at(-1)).toBe('paid');
    await closeOrderStreams();
  });

  it("sheds a flood of orders from one address at nginx: the app sees at most the limit, the rest get the API's 429", async () => {
    const voucherId = await insertVoucher(1_000);
    const [user] = await createUsersWithSessions({ db: db!, redis: redis!, config: loadConfig({ NODE_ENV: 'test' }) } as TestEnv, 1, 16_200_000_000);
    const before = await ordersSeen();
    const flood = 120;
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: flood }, () => send('127.0.0.2', 'POST', `/api/voucher-order/seckill/${voucherId}`, { authorization: user!.token })),
    );
    const seconds = (performance.now() - started) / 1000;
    // nginx's answers carry no X-Upstream: no instance was asked.
    const shed = answers.filter((answer) => answer.headers['x-upstream'] === undefined);
    const reached = flood - shed.length;
    // limit_req admits one, the burst, then ORDER_RATE a second: whatever the machine's speed.
    const limit = 1 + ORDER_BURST + Math.ceil(ORDER_RATE * seconds);
    console.log(`edge flood: ${flood} orders from one address in ${seconds.toFixed(2)} s, ${reached} reached the app (limit ${limit})`);
    expect(reached).toBeGreaterThan(0);
    expect(reached).toBeLessThanOrEqual(limit);
    for (const answer of shed) {
      expect(answer.status).toBe(429);
      expect(answer.headers['retry-after']).toBe('1');
      expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
      // The app's own wrapper and message (no Accept-Language: Chinese).
      expect(JSON.parse(answer.body)).toEqual({ success: false, errorMsg: render(SECKILL_MESSAGES.tooManyFromAddress({ seconds: 1 }), 'zh') });
    }
    // Counted by the instances themselves: the sale's pool answered exactly those that passed, the
    // site's pool none.
    await expect.poll(async () => (await ordersSeen()).sale - before.sale).toBe(reached);
    expect((await ordersSeen()).site).toBe(before.site);
  });

  it("keeps serving the site from its pool while the sale's pool is stopped; limit_conn sheds a browser's page request with the static page", async () => {
    const pids = await Promise.all(saleApps.map(async (port) => Number(await readFile(join(dir, 'run', `app-${port}.pid`), 'utf8'))));
    for (const pid of pids) process.kill(pid, 'SIGSTOP');
    const extra = 3;
    const page = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
    let held: Array<Promise<Answer>> | undefined;
    try {
      // Shop pages and the API's site routes: answered by the site's pool, or by the edge from the Cluster.
      for (const path of ['/api/shop/1', '/api/shop-type/list', '/api/voucher/list/1']) {
        const started = performance.now();
        // Bounded well within the test's time, so that a request stuck in the stopped pool fails the
        // test with the pool resumed.
        const answer = await send('127.0.0.1', 'GET', path, {}, 5_000);
        console.log(`edge: ${path} with the sale's pool stopped: ${answer.status} in ${(performance.now() - started).toFixed(1)} ms`);
        expect(answer.status).toBe(200);
        expect([`127.0.0.1:${siteApp}`, undefined]).toContain(answer.headers['x-upstream']);
      }
      expect((await fetch(`http://127.0.0.1:${httpPort}/shop/1`)).status).toBe(200);
      // A browser's requests of the sale from one address: SALE_CONN of them wait in the stopped
      // pool and hold every slot, the rest are shed with the static page (exactly: none of the held
      // ones can finish while the pool is stopped).
      held = Array.from({ length: SALE_CONN + extra }, () => send('127.0.0.3', 'GET', '/api/voucher-order/seckill/1/captcha', page));
      const shed = await firstAnswers(held, extra);
      for (const answer of shed) {
        expect(answer.status).toBe(429);
        expect(answer.headers['content-type']).toBe('text/html; charset=utf-8');
        expect(answer.headers['retry-after']).toBe('1');
        expect(answer.body).toContain('活动太火爆，请稍后再试');
      }
      // Every slot is held now: an API call is shed too, in the language it asks for.
      const english = await send('127.0.0.3', 'POST', '/api/voucher-order/seckill/1', { 'accept-language': 'en-US,en;q=0.9' });
      expect(english.status).toBe(429);
      expect(JSON.parse(english.body)).toEqual({ success: false, errorMsg: render(SECKILL_MESSAGES.tooManyFromAddress({ seconds: 1 }), 'en') });
    } finally {
      for (const pid of pids) process.kill(pid, 'SIGCONT');
    }
    // The held ones reach the resumed pool (no session: 401 from the app).
    const answers = await Promise.all(held ?? []);
    expect(answers.filter((answer) => answer.status === 401)).toHaveLength(SALE_CONN);
  });
});

/**
 * dist/ as `npm run build` makes it, without its type check (the checks project type-checks the
 * same sources; tsc emits the same JavaScript either way): `up` builds only when dist/ is stale,
 * the checked build takes ~19 s of CPU, this one ~8 s.
 */
async function buildDist(): Promise<void> {
  await run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json', '--noCheck']);
  await run(process.execPath, ['scripts/copy-assets.mjs']);
}

async function insertVoucher(stock: number): Promise<string> {
  const result = await db!
    .insertInto('tb_voucher')
    .values({ shop_id: '1', title: 'topology', pay_value: '100', actual_value: '200', type: 1 })
    .executeTakeFirstOrThrow();
  const voucherId = String(result.insertId);
  const second = (offset: number) => new Date(Math.floor((Date.now() + offset) / 1000) * 1000);
  await db!
    .insertInto('tb_seckill_voucher')
    .values({ voucher_id: voucherId, stock, begin_time: second(-3_600_000), end_time: second(3_600_000) })
    .execute();
  return voucherId;
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A request to nginx from a loopback address of the caller's choice (its limits are per address). */
function send(from: string, method: string, path: string, headers: Record<string, string>, timeoutMs = 20_000): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const outgoing = request({ host: '127.0.0.1', port: httpPort, localAddress: from, method, path, headers, agent: false, timeout: timeoutMs }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
      response.on('error', reject);
    });
    outgoing.on('timeout', () => outgoing.destroy(new Error(`${method} ${path} from ${from}: no answer in ${timeoutMs} ms`)));
    outgoing.on('error', reject);
    outgoing.end();
  });
}

/** The first `count` answers of `pending`, in the order they arrive. */
function firstAnswers(pending: Array<Promise<Answer>>, count: number): Promise<Answer[]> {
  return new Promise((resolve, reject) => {
    const arrived: Answer[] = [];
    for (const promise of pending) {
      promise.then((answer) => {
        arrived.push(answer);
        if (arrived.length === count) resolve(arrived);
      }, reject);
    }
  });
}

/** Order requests each pool's instances answered, by their own metrics (http_request_duration_seconds). */
async function ordersSeen(): Promise<{ sale: number; site: number }> {
  const token = (await readFile(join(dir, 'metrics-token'), 'utf8')).trim();
  const count = async (port: number) => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
    const series = text.split('\n').filter((line) => line.startsWith(`http_request_duration_seconds_count{method="POST",route="${ORDER_ROUTE}",`));
    return series.reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
  };
  const total = async (ports: number[]) => (await Promise.all(ports.map(count))).reduce((sum, value) => sum + value, 0);
  return { sale: await total(saleApps), site: await total([siteApp]) };
}
