/**
 * Seckill benchmark: async (Lua + stream) vs sync (lock + transaction) vs a bare EVALSHA
 * endpoint, in one run, each against its own server process; with the correctness check of
 * every sale (orders in MySQL = stock, no user twice) next to its numbers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import { createConnection } from 'mysql2/promise';
import { Redis } from 'ioredis';
import { createDb, type Db } from '../src/infra/db.js';
import { ensureDatabase, migrateToLatest } from '../src/infra/migrate.js';
import { closeRedis, createRedis, deleteKeysWithPrefix, type RedisClient } from '../src/infra/redis.js';
import { SessionStore } from '../src/modules/user/session-store.js';

export interface SeckillBenchOptions {
  /** Requests per scenario, each from a different user. */
  requests?: number;
  stock?: number;
  connections?: number;
  redisUrl?: string;
  mysqlServerUrl?: string;
}

export interface ScenarioResult {
  name: string;
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  accepted: number;
  /** ms from the end of the load until every accepted order was in MySQL (async only). */
  drainMs?: number;
  ordersInMysql?: number;
  distinctUsers?: number;
  correct?: boolean;
}

const RUN = `hmdp_bench_${process.pid}`;

export async function runSeckillBench(options: SeckillBenchOptions = {}): Promise<ScenarioResult[]> {
  const { requests = 20_000, stock = 5_000, connections = 100 } = options;
  const redisUrl = options.redisUrl ?? 'redis://127.0.0.1:6379/0';
  const mysqlUrl = `${(options.mysqlServerUrl ?? 'mysql://root@127.0.0.1:3306').replace(/\/$/, '')}/${RUN}`;
  const keyPrefix = `${RUN}:`;
  await ensureDatabase(mysqlUrl);
  const db = createDb({ mysqlUrl, poolSize: 5 });
  const redis = createRedis({ redisUrl, redisClusterNodes: [], redisKeyPrefix: keyPrefix });
  try {
    await migrateToLatest(db);
    await db.insertInto('tb_shop').values({ id: '1', name: 'bench', type_id: '1', address: '-', x: 120.15, y: 30.33 }).execute();
    const env = { MYSQL_URL: mysqlUrl, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: keyPrefix, MYSQL_POOL_SIZE: '20' };
    const results: ScenarioResult[] = [];

    const bare = await startServer({ ...env, SECKILL_WORKER: 'false' });
    try {
      results.push(await load('bare EVALSHA', bare.port, '/bench/evalsha', [], requests, connections));
    } finally {
      await stopServer(bare.child);
    }

    const scenarios = [
      { name: 'async', strategy: 'async', worker: true },
      { name: 'async, worker in its own process', strategy: 'async', worker: false },
      { name: 'sync', strategy: 'sync', worker: true },
    ] as const;
    for (const [index, scenario] of scenarios.entries()) {
      const tokens = await createUsers(db, redis, requests, index * requests);
      const voucherId = await createVoucher(db, stock);
      const server = await startServer({ ...env, SECKILL_STRATEGY: scenario.strategy, SECKILL_WORKER: String(scenario.worker) });
      let worker: ChildProcess | undefined;
      try {
        const result = await load(scenario.name, server.port, `/api/voucher-order/seckill/${voucherId}`, tokens, requests, connections);
        const drainStart = Date.now();
        // Without an in-process worker the orders wait in the stream until the worker process starts.
        if (!scenario.worker) worker = startWorker({ ...env, SECKILL_STRATEGY: 'async' });
        await waitFor(async () => (await countOrders(db, voucherId)) >= Math.min(result.accepted, stock), 120_000);
        if (scenario.strategy === 'async') result.drainMs = Date.now() - drainStart;
        Object.assign(result, await verify(db, voucherId, stock, result.accepted));
        results.push(result);
      } finally {
        if (worker) await stopServer(worker);
        await stopServer(server.child);
      }
    }
    return results;
  } finally {
    await db.destroy();
    const raw = new Redis(redisUrl);
    await deleteKeysWithPrefix(raw, keyPrefix).finally(() => raw.disconnect());
    await closeRedis(redis);
    const connection = await createConnection(options.mysqlServerUrl ?? 'mysql://root@127.0.0.1:3306');
    await connection.query(`DROP DATABASE IF EXISTS \`${RUN}\``);
    await connection.end();
  }
}

async function startServer(env: Record<string, string>): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/server.ts'], {
    env: { ...process.env, NODE_ENV: 'production', LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  for await (const line of lines) {
    if (line.startsWith('{')) return { child, port: (JSON.parse(line) as { port: number }).port };
  }
  throw new Error('bench server exited before listening');
}

function startWorker(env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', 'src/cli/order-worker.ts'], {
    env: { ...process.env, NODE_ENV: 'production', LOG_LEVEL: 'silent', SECKILL_CONSUMER: 'bench-worker', ...env },
    stdio: 'ignore',
  });
}

async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await once(child, 'exit');
  clearTimeout(timer);
}

async function load(name: string, port: number, path: string, tokens: string[], amount: number, connections: number): Promise<ScenarioResult> {
  let next = 0;
  let accepted = 0;
  // Wall time of our own, to the last response: autocannon ends a run on its next 1 s tick.
  const started = performance.now();
  let lastResponse = started;
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections,
    amount,
    requests: [
      {
        method: 'POST',
        path,
        setupRequest: (request) => {
          const token = tokens[next++ % Math.max(tokens.length, 1)];
          return token ? { ...request, headers: { ...request.headers, authorization: token } } : request;
        },
        onResponse: (_status, body) => {
          lastResponse = performance.now();
          if (body.includes('"success":true')) accepted += 1;
        },
      },
    ],
  });
  return {
    name,
    requests: result.requests.total,
    rps: Math.round(result.requests.total / ((lastResponse - started) / 1000)),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
    accepted,
  };
}

/** `count` users with sessions; ids start after `offset` so the strategies never share a buyer. */
async function createUsers(db: Db, redis: RedisClient, count: number, offset: number): Promise<string[]> {
  const first = 16_000_000_000 + offset;
  for (let i = 0; i < count; i += 1000) {
    const rows = Array.from({ length: Math.min(1000, count - i) }, (_, j) => ({ phone: String(first + i + j) }));
    await db.insertInto('tb_user').values(rows).execute();
  }
  const users = await db.selectFrom('tb_user').select('id').where('phone', '>=', String(first)).where('phone', '<', String(first + count)).execute();
  const sessions = new SessionStore(redis, 3600);
  return Promise.all(users.map((user) => sessions.create({ id: user.id, nickName: 'bench', icon: '' })));
}

async function createVoucher(db: Db, stock: number): Promise<string> {
  const result = await db.insertInto('tb_voucher').values({ shop_id: '1', title: 'bench', pay_value: '1', actual_value: '1', type: 1 }).executeTakeFirstOrThrow();
  const voucherId = String(result.insertId);
  const now = Math.floor(Date.now() / 1000) * 1000;
  await db.insertInto('tb_seckill_voucher').values({ voucher_id: voucherId, stock, begin_time: new Date(now - 3600_000), end_time: new Date(now + 3600_000) }).execute();
  return voucherId;
}

async function countOrders(db: Db, voucherId: string): Promise<number> {
  const row = await db.selectFrom('tb_voucher_order').select((eb) => eb.fn.countAll<string>().as('n')).where('voucher_id', '=', voucherId).executeTakeFirstOrThrow();
  return Number(row.n);
}

async function verify(db: Db, voucherId: string, stock: number, accepted: number) {
  const { rows } = await sql<{ orders: string; users: string }>`
    SELECT COUNT(*) AS orders, COUNT(DISTINCT user_id) AS users FROM tb_voucher_order WHERE voucher_id = ${voucherId}`.execute(db);
  const ordersInMysql = Number(rows[0]!.orders);
  const distinctUsers = Number(rows[0]!.users);
  const left = (await db.selectFrom('tb_seckill_voucher').select('stock').where('voucher_id', '=', voucherId).executeTakeFirstOrThrow()).stock;
  const correct = ordersInMysql === accepted && distinctUsers === accepted && ordersInMysql <= stock && left === stock - ordersInMysql;
  return { ordersInMysql, distinctUsers, correct };
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the orders to reach MySQL');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export function seckillTable(results: ScenarioResult[]): string {
  const header = '| scenario | requests | req/s | p50 ms | p99 ms | errors | accepted | in MySQL | distinct users | drain ms | correct |\n|---|---|---|---|---|---|---|---|---|---|---|';
  const rows = results.map((r) =>
    `| ${r.name} | ${r.requests} | ${r.rps} | ${r.p50} | ${r.p99} | ${r.errors} | ${r.accepted} | ${r.ordersInMysql ?? '–'} | ${r.distinctUsers ?? '–'} | ${r.drainMs ?? '–'} | ${r.correct === undefined ? '–' : r.correct ? 'yes' : 'NO'} |`,
  );
  return [header, ...rows].join('\n');
}
