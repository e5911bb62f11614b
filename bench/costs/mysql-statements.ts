/**
 * The MySQL statements an API request sends: `npx tsx bench/costs/mysql-statements.ts`.
 *
 * Starts a private redis-server and production's entry, src/main.ts (its pool bounded by the
 * deadlines, as the bench server's is not), on a database of its own, gives the first bench user
 * BLOGS blogs, then sends REQUESTS requests of `GET /api/blog/of/me` one after another (after one
 * that opens the pool's connection). Over that slice it reads MariaDB's global counters: Questions
 * (statements sent by clients), Com_select, Com_set_option (SET statements: the session's time
 * zone) and Connections (connections opened), less what an idle slice as long counts (the
 * server's background work, this script's own status reads).
 *
 * Global counters count every client of the server: run it on a MariaDB nothing else is using (as
 * the bench runs), or the other clients' statements count as the requests'.
 */
import { spawn } from 'node:child_process';
import { createConnection, type Connection, type RowDataPacket } from 'mysql2/promise';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { freePort, startRedisServer } from '../../kit/redis-servers.js';
import { BENCH_PURCHASE_TOKEN_KEYS, createOwnWorld, stopProcess } from '../harness/index.js';

const REQUESTS = Number(process.env.REQUESTS ?? 50);
const BLOGS = 5;
const COUNTERS = ['Questions', 'Com_select', 'Com_set_option', 'Connections'] as const;
type Counts = Record<(typeof COUNTERS)[number], number>;

const mysqlServerUrl = (process.env.MYSQL_SERVER_URL ?? 'mysql://root@127.0.0.1:3306').replace(/\/$/, '');
const redisServer = await startRedisServer();
const world = await createOwnWorld({ redisUrl: redisServer.url, mysqlServerUrl, users: 1, name: `hmdp_bench_statements_${process.pid}` });
const server = await startProduction(world.env);
const status = await createConnection(mysqlServerUrl);
const pool = new Pool(server.url, { connections: 1 });
try {
  const user = world.users[0]!;
  await world.db
    .insertInto('tb_blog')
    .values(Array.from({ length: BLOGS }, (_, i) => ({ shop_id: world.shopId, user_id: user.id, title: `blog ${i}`, content: 'statements' })))
    .execute();
  const myBlogs = async (): Promise<void> => {
    const { statusCode, body } = await pool.request({ method: 'GET', path: '/api/blog/of/me', headers: { authorization: user.token } });
    const text = await body.text();
    if (statusCode !== 200) throw new Error(`GET /api/blog/of/me answered ${statusCode}: ${text}`);
  };
  await myBlogs();

  const load = await slice(async () => {
    for (let i = 0; i < REQUESTS; i += 1) await myBlogs();
  });
  const idle = await slice(() => sleep(load.ms));
  console.log(`${REQUESTS} × GET /api/blog/of/me (${BLOGS} blogs), one after another, in ${Math.round(load.ms)} ms`);
  console.log('MariaDB global counter | in the slice | idle slice as long | per request (slice − idle)');
  for (const name of COUNTERS) {
    const perRequest = (load.counts[name] - idle.counts[name]) / REQUESTS;
    console.log(`  ${name.padEnd(22)} ${String(load.counts[name]).padStart(6)} | ${String(idle.counts[name]).padStart(6)} | ${perRequest.toFixed(2)}`);
  }
} finally {
  await pool.close();
  await status.end();
  await server.stop();
  await world.destroy();
  await redisServer.kill();
}

/** The counters' growth while `work` runs. */
async function slice(work: () => Promise<unknown>): Promise<{ ms: number; counts: Counts }> {
  const before = await counters(status);
  const started = performance.now();
  await work();
  const ms = performance.now() - started;
  const after = await counters(status);
  return { ms, counts: Object.fromEntries(COUNTERS.map((name) => [name, after[name] - before[name]])) as Counts };
}

async function counters(connection: Connection): Promise<Counts> {
  const [rows] = await connection.query<RowDataPacket[]>(`SHOW GLOBAL STATUS WHERE Variable_name IN (${COUNTERS.map(() => '?').join(', ')})`, [...COUNTERS]);
  const values = new Map(rows.map((row) => [String(row.Variable_name), Number(row.Value)]));
  return Object.fromEntries(COUNTERS.map((name) => [name, values.get(name) ?? Number.NaN])) as Counts;
}

/** src/main.ts under tsx (the statements are those of the compiled build), listening once /api/health answers 200. */
async function startProduction(env: Record<string, string>): Promise<{ url: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: new URL('../..', import.meta.url).pathname,
    env: {
      ...process.env,
      ...env,
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      SMS_SENDER: 'log',
      PURCHASE_TOKEN_KEYS: BENCH_PURCHASE_TOKEN_KEYS,
      HOST: '127.0.0.1',
      PORT: String(port),
      SECKILL_WORKER: 'false',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let attempt = 0; ; attempt += 1) {
    const status = await fetch(`${url}/api/health`).then(
      (response) => response.status,
      () => 0,
    );
    if (status === 200) return { url, stop: () => stopProcess(child) };
    if (attempt === 300 || child.exitCode !== null) {
      await stopProcess(child);
      throw new Error(`src/main.ts did not become healthy (last status ${status})`);
    }
    await sleep(100);
  }
}
