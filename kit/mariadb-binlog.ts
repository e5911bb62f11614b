import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { createDb } from '../src/infra/db.js';
import { ensureDatabase, migrateToLatest } from '../src/infra/migrate.js';
import { freePort } from './redis-servers.js';

const MARIADBD = process.env.MARIADBD_BIN ?? 'mariadbd';
const INSTALL_DB = process.env.MARIADB_INSTALL_DB_BIN ?? 'mariadb-install-db';
const started = new Set<ChildProcess>();

// Never leak a server, even when the process (a test, a benchmark) dies of a failure or a timeout.
process.on('exit', () => {
  for (const server of started) server.kill('SIGKILL');
});

/** A throw-away mariadbd writing a ROW binlog, on a free loopback port and a folder of its own. */
export interface BinlogMariadb {
  readonly port: number;
  /** The server, no database: `mysql://root@127.0.0.1:<port>`. */
  readonly serverUrl: string;
  /** The app's database on it, migrated: `<serverUrl>/<database>`. */
  readonly mysqlUrl: string;
  readonly database: string;
  readonly dataDir: string;
  /** SIGKILL the server and remove its folders. */
  stop(): Promise<void>;
}

export interface BinlogMariadbOptions {
  /** The app's database, created and migrated (default `hmdp`). */
  database?: string;
  /** `--server-id` (default 1). */
  serverId?: number;
}

/**
 * `mariadb-install-db --no-defaults` into a new temporary folder, then `mariadbd --no-defaults
 * --log-bin --binlog-format=ROW` on a free port (never the shared MariaDB), the app's migrations
 * applied to `database`. Ready in about 3 s. Each server has a temporary folder of its own beside
 * its data: in a shared /tmp, servers installed or run at once remove each other's temporary tables.
 */
export async function startBinlogMariadb(options: BinlogMariadbOptions = {}): Promise<BinlogMariadb> {
  const database = options.database ?? 'hmdp';
  const root = await mkdtemp(join(tmpdir(), 'hmdp-binlog-mariadb-'));
  const folders = { data: join(root, 'data'), tmp: join(root, 'tmp') };
  try {
    await Promise.all([mkdir(folders.data), mkdir(folders.tmp)]);
    await run(INSTALL_DB, [
      '--no-defaults',
      `--datadir=${folders.data}`,
      `--tmpdir=${folders.tmp}`,
      '--user=root',
      '--auth-root-authentication-method=normal',
      '--skip-test-db',
    ]);
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      let child: ChildProcess | undefined;
      try {
        child = await startServer(folders, port, options.serverId ?? 1);
        const serverUrl = `mysql://root@127.0.0.1:${port}`;
        const mysqlUrl = `${serverUrl}/${database}`;
        await migrate(mysqlUrl);
        const server = child;
        return { port, serverUrl, mysqlUrl, database, dataDir: folders.data, stop: () => stop(server, root) };
      } catch (error) {
        // A server that started but could not be migrated holds the data's locks: gone before the next attempt.
        if (child) await killed(child);
        if (attempt >= 3) throw error;
      }
    }
  } catch (error) {
    await rm(root, { recursive: true, force: true });
    throw error;
  }
}

async function migrate(mysqlUrl: string): Promise<void> {
  await ensureDatabase(mysqlUrl);
  const db = createDb({ mysqlUrl, poolSize: 2 });
  try {
    await migrateToLatest(db);
  } finally {
    await db.destroy();
  }
}

/**
 * mariadbd on the folders, resolved once it listens. A start that fails is rejected only once its
 * process has exited: the next attempt on the same data would find InnoDB's and Aria's files still
 * locked (Aria then waits 30 s for its lock, past the readiness bound).
 */
function startServer(folders: { data: string; tmp: string }, port: number, serverId: number): Promise<ChildProcess> {
  const dataDir = folders.data;
  const child = spawn(
    MARIADBD,
    [
      '--no-defaults',
      `--datadir=${dataDir}`,
      `--tmpdir=${folders.tmp}`,
      `--port=${port}`,
      `--socket=${join(dataDir, 'mysqld.sock')}`,
      `--pid-file=${join(dataDir, 'mysqld.pid')}`,
      '--bind-address=127.0.0.1',
      '--user=root',
      `--log-bin=${join(dataDir, 'binlog')}`,
      '--binlog-format=ROW',
      `--server-id=${serverId}`,
      '--skip-name-resolve',
      '--innodb-buffer-pool-size=32M',
      '--innodb-log-file-size=16M',
      '--max-connections=200',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  started.add(child);
  child.once('exit', () => started.delete(child));
  return new Promise((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => fail(new Error(`mariadbd on ${port} not ready in 30 s: ${log.slice(-2000)}`)), 30_000);
    let failure: Error | undefined;
    const fail = (error: Error): void => {
      clearTimeout(timer);
      failure ??= error;
      const running = child.pid !== undefined && child.exitCode === null && child.signalCode === null;
      // Its 'exit' comes back here, with the process gone.
      if (running) child.kill('SIGKILL');
      else reject(failure);
    };
    child.once('error', fail);
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void =>
      fail(new Error(`mariadbd on ${port} exited (${String(code ?? signal)}): ${log.slice(-2000)}`));
    child.once('exit', onExit);
    // mariadbd logs to stderr; "ready for connections" comes once it listens.
    const onData = (chunk: string): void => {
      log += chunk;
      if (log.includes('ready for connections')) {
        clearTimeout(timer);
        child.off('exit', onExit);
        resolve(child);
      }
    };
    child.stdout.setEncoding('utf8').on('data', onData);
    child.stderr.setEncoding('utf8').on('data', onData);
  });
}

async function stop(child: ChildProcess, root: string): Promise<void> {
  await killed(child);
  await rm(root, { recursive: true, force: true });
}

/** SIGKILL (a stopped one continued first), its exit awaited. */
async function killed(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGCONT');
  child.kill('SIGKILL');
  await exited;
}

function run(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited with ${String(code)}: ${output.slice(-2000)}`))));
  });
}

/** One statement on the server as root (FLUSH / PURGE BINARY LOGS, SHOW ...), for tests. */
export async function onServer<T = unknown>(serverUrl: string, sql: string): Promise<T> {
  const connection = await createConnection(serverUrl);
  try {
    const [rows] = await connection.query(sql);
    return rows as T;
  } finally {
    await connection.end();
  }
}
