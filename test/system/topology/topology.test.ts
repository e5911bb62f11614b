import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/infra/config.js';
import { createDb, type Db } from '../../../src/infra/db.js';
import { closeRedis, createRedis, type RedisClient } from '../../../src/infra/redis.js';
import { SECKILL_MESSAGES } from '../../../src/modules/seckill/messages.js';
import { SaleStore } from '../../../src/modules/seckill/sale/sale-store.js';
import { SaleKeys } from '../../../src/modules/seckill/keys.js';
import { eventually } from '../../support/eventually.js';
import { closeOrderStreams, openOrderStream } from '../../support/order-stream.js';
import { testMysqlUrl } from '../../../kit/services.js';
import { createUsersWithSessions, type TestEnv } from '../../support/test-env.js';

/**
 * scripts/topology.sh end to end: nginx in front of three app instances, a Redis Cluster of
 * 3 masters + 3 replicas and two order workers, on free ports of their own. Orders placed through
 * nginx are served by several instances and land in MySQL exactly once.
 */
const run = promisify(execFile);
const SHARDS = 4;

let dir: string;
let env: Record<string, string>;
let httpPort: number;
let prometheusPort: number;
let workerMetricsBase: number;
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
  const redisBase = await freeRange(6, true);
  const appBase = await freeRange(3, false, [redisBase]);
  httpPort = await freeRange(1, false, [redisBase, appBase]);
  workerMetricsBase = await freeRange(2, false, [redisBase, appBase, httpPort]);
  prometheusPort = await freeRange(1, false, [redisBase, appBase, httpPort, workerMetricsBase]);
  nodes = Array.from({ length: 6 }, (_, i) => `127.0.0.1:${redisBase + i}`);
  env = {
    ...(process.env as Record<string, string>),
    NODE_ENV: 'production',
    MYSQL_URL: `${testMysqlUrl()}/unused`,
    TOPOLOGY_DIR: dir,
    TOPOLOGY_DB: database,
    TOPOLOGY_REDIS_BASE_PORT: String(redisBase),
    TOPOLOGY_APP_BASE_PORT: String(appBase),
    TOPOLOGY_HTTP_PORT: String(httpPort),
    TOPOLOGY_WORKER_METRICS_BASE_PORT: String(workerMetricsBase),
    TOPOLOGY_PROMETHEUS: '1',
    TOPOLOGY_PROMETHEUS_PORT: String(prometheusPort),
    SECKILL_STREAM_SHARDS: String(SHARDS),
    LOG_LEVEL: 'warn',
  };
  await topology('up');
  db = createDb({ mysqlUrl: `${testMysqlUrl()}/${database}`, poolSize: 2 });
  redis = createRedis({ redisUrl: 'redis://unused', redisClusterNodes: nodes.slice(0, 3), redisKeyPrefix: '' });
}, 300_000);

afterAll(async () => {
  await db?.destroy();
  if (redis) await closeRedis(redis);
  if (env) await topology('down', '--purge');
  if (dir) await rm(dir, { recursive: true, force: true });
}, 120_000);

describe('scripts/topology.sh', () => {
  it('reports every part running', async () => {
    const { stdout } = await topology('status');
    expect(stdout.match(/role:master/g)).toHaveLength(3);
    expect(stdout.match(/role:slave/g)).toHaveLength(3);
    expect(stdout).toContain('cluster_state:ok');
    expect(stdout.match(/healthy/g)).toHaveLength(3);
    expect(stdout.match(/consumer topology-worker-\d/g)).toHaveLength(2);
    expect(stdout).toMatch(/nginx\s+pid \d+/);
    expect(stdout).toMatch(/prometheus\s+pid \d+/);
  });

  it('starts a Prometheus that scrapes every app instance and order worker and evaluates ops/prometheus/alerts.yml', async () => {
    const api = async <T>(path: string) => ((await (await fetch(`http://127.0.0.1:${prometheusPort}/api/v1/${path}`)).json()) as { data: T }).data;
    await eventually(async () => {
      const { activeTargets } = await api<{ activeTargets: Array<{ scrapeUrl: string; health: string }> }>('targets');
      expect(activeTargets.map((target) => target.health)).toEqual(['up', 'up', 'up', 'up', 'up']);
    }, 30_000);
    const { groups } = await api<{ groups: Array<{ rules: Array<{ name: string; health: string }> }> }>('rules');
    const rules = groups.flatMap((group) => group.rules);
    expect(rules.map((rule) => rule.name)).toContain('HmdpDeadLetters');
    expect(rules.every((rule) => rule.health === 'ok')).toBe(true);
    // The workers' own series, from their WORKER_METRICS_PORT.
    const breaker = await api<{ result: unknown[] }>(
      `query?query=${encodeURIComponent(`seckill_worker_breaker_state{state="closed",instance=~".*:(${workerMetricsBase}|${workerMetricsBase + 1})"}`)}`,
    );
    expect(breaker.result).toHaveLength(2);
  });

  it('serves the front end and the API through nginx; /metrics stays off it', async () => {
    const page = await fetch(`http://127.0.0.1:${httpPort}/shop/1`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="app"');
    expect((await fetch(`http://127.0.0.1:${httpPort}/metrics`)).status).toBe(404);
    const types = await fetch(`http://127.0.0.1:${httpPort}/api/shop-type/list`);
    expect(((await types.json()) as { success: boolean }).success).toBe(true);
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
    expect(upstreams.size).toBeGreaterThan(1);
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
    expect((await new SaleStore(redis!, new SaleKeys(SHARDS)).read(voucherId))?.stock).toBe(0);
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
});

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

/** The first of `count` consecutive free ports (and, for Redis Cluster, their bus ports + 10000). */
async function freeRange(count: number, withBus: boolean, avoid: number[] = []): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const base = 20_000 + Math.floor(Math.random() * 9_000);
    if (avoid.some((other) => Math.abs(other - base) < 20)) continue;
    const ports = Array.from({ length: count }, (_, i) => base + i);
    const all = withBus ? [...ports, ...ports.map((port) => port + 10_000)] : ports;
    if ((await Promise.all(all.map(isFree))).every(Boolean)) return base;
  }
  throw new Error('no free port range');
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
