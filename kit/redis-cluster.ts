import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';

const run = promisify(execFile);

/** A throw-away Redis Cluster on spare loopback ports, for one test file or fault scenario. */
export interface TestCluster {
  /** Every node, `host:port`: the masters first, then the replicas (as created). */
  nodes: string[];
  /** The node's process, by port (for faults: SIGKILL, SIGSTOP, SIGCONT). */
  process(port: number): ChildProcess;
  /** The master now serving `slot`, and its replicas (from CLUSTER NODES, asked of a live node). */
  shardOf(slot: number): Promise<{ master: number; replicas: number[] }>;
  /** Resolves once every slot is served again (e.g. after a failover) and the cluster says ok. */
  waitUntilHealthy(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  masters?: number;
  /** Replicas per master (0: none). */
  replicas?: number;
  /**
   * cluster-node-timeout: how long a node may be unreachable before it is deemed failed and its
   * replica promoted. Redis' default is 15 s; a short one keeps failover tests short.
   */
  nodeTimeoutMs?: number;
}

export async function startRedisCluster(options: number | ClusterOptions = 3): Promise<TestCluster> {
  const { masters = 3, replicas = 0, nodeTimeoutMs = 15_000 } = typeof options === 'number' ? { masters: options } : options;
  const size = masters * (1 + replicas);
  const dir = await mkdtemp(join(tmpdir(), 'hmdp-cluster-'));
  const children = new Map<number, ChildProcess>();
  const killAll = () => children.forEach((child) => child.kill('SIGKILL'));
  process.once('exit', killAll); // never leak servers, even when the test run dies
  try {
    const ports: number[] = [];
    for (let i = 0; i < size; i += 1) {
      const { port, child } = await startNode(dir, ports, nodeTimeoutMs);
      ports.push(port);
      children.set(port, child);
    }
    const nodes = ports.map((port) => `127.0.0.1:${port}`);
    // redis-cli makes the first `masters` nodes masters and gives each `replicas` of the rest.
    await run('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', String(replicas), '--cluster-yes']);
    await Promise.all(ports.map((port) => waitForClusterOk(port)));
    if (replicas > 0) await Promise.all(ports.map((port) => waitForReplicaInSync(port)));
    // Each node learns who replicates whom by gossip: a node asked too early names a master without its replica.
    if (replicas > 0) await Promise.all(ports.map((port) => waitForTopologySeen(port, masters, replicas)));
    const live = () => ports.filter((port) => children.get(port)!.exitCode === null && children.get(port)!.signalCode === null);
    return {
      nodes,
      process: (port) => {
        const child = children.get(port);
        if (!child) throw new Error(`no cluster node on port ${port}`);
        return child;
      },
      shardOf: (slot) => firstAnswer(live(), (port) => shardOfSlot(port, slot)),
      waitUntilHealthy: (timeoutMs = 30_000) =>
        until(
          async () => (await Promise.all(live().map((port) => clusterInfo(port).catch(() => '')))).every((info) => info.includes('cluster_state:ok')),
          timeoutMs,
        ),
      stop: async () => {
        children.forEach((child) => child.kill('SIGCONT')); // a stopped node dies of SIGKILL too, but only once it runs
        killAll();
        await Promise.all(
          [...children.values()]
            .filter((child) => child.exitCode === null && child.signalCode === null)
            .map((child) => new Promise((r) => child.once('exit', r))),
        );
        process.removeListener('exit', killAll);
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    killAll();
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

/** How many ports a node may try: another process can take a port between the check and the bind. */
const NODE_START_ATTEMPTS = 5;

/**
 * One cluster node on a free port, answered by this very process. A port found free may be taken
 * before redis-server binds it (a test file starting servers beside this one): the node then
 * exits, or another server answers on the port; either way it is retried on another port.
 */
async function startNode(dir: string, taken: number[], nodeTimeoutMs: number): Promise<{ port: number; child: ChildProcess }> {
  for (let attempt = 0; attempt < NODE_START_ATTEMPTS; attempt += 1) {
    const port = await freeClusterPort(taken);
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--dir',
        dir,
        '--cluster-node-timeout',
        String(nodeTimeoutMs),
        // A master's first sync to its replica at once: by default (5 s) it waits for more replicas to share the transfer, and a node here has one.
        '--repl-diskless-sync-delay',
        '0',
      ],
      { stdio: 'ignore' },
    );
    const ours = await answersAs(port, child).catch((error: unknown) => {
      child.kill('SIGKILL');
      throw error;
    });
    if (ours) return { port, child };
    child.kill('SIGKILL');
  }
  throw new Error(`no cluster node started in ${NODE_START_ATTEMPTS} attempts (ports taken by other processes)`);
}

/** Whether the server answering on `port` is `child` (INFO's process_id); false once it exited or another answers. */
async function answersAs(port: number, child: ChildProcess): Promise<boolean> {
  let owner: number | undefined;
  await until(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return true;
    owner = await processIdOn(port);
    return owner !== undefined;
  });
  return owner === child.pid && child.exitCode === null;
}

async function processIdOn(port: number): Promise<number | undefined> {
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  client.on('error', () => {}); // refused until the server is up: expected here
  try {
    await client.connect();
    const info = await client.info('server');
    return Number(/process_id:(\d+)/.exec(info)?.[1]);
  } catch {
    return undefined;
  } finally {
    client.disconnect();
  }
}

/** A port p with p and its cluster bus port p + 10000 both free. */
async function freeClusterPort(taken: number[]): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    if (taken.includes(port)) continue;
    if ((await isFree(port)) && (await isFree(port + 10_000))) return port;
  }
  throw new Error('no free port pair for a cluster node');
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

async function clusterInfo(port: number): Promise<string> {
  const { stdout } = await run('redis-cli', ['-p', String(port), 'cluster', 'info'], { timeout: 2_000 });
  return stdout;
}

async function waitForClusterOk(port: number): Promise<void> {
  await until(async () => (await clusterInfo(port)).includes('cluster_state:ok'));
}

/** A replica counts once its link to the master is up and the first full sync is done. */
async function waitForReplicaInSync(port: number): Promise<void> {
  await until(async () => {
    const { stdout } = await run('redis-cli', ['-p', String(port), 'info', 'replication']);
    return stdout.includes('role:master') || (stdout.includes('master_link_status:up') && stdout.includes('master_sync_in_progress:0'));
  });
}

async function shardOfSlot(port: number, slot: number): Promise<{ master: number; replicas: number[] }> {
  // CLUSTER NODES: "<id> <ip:port@bus> <flags> <master-id> <ping> <pong> <epoch> <link> <slot ranges…>"
  const { stdout } = await run('redis-cli', ['-p', String(port), 'cluster', 'nodes'], { timeout: 2_000 });
  const rows = stdout
    .trim()
    .split('\n')
    .map((line) => line.split(' '));
  const portOf = (row: string[]) => Number(row[1]!.split('@')[0]!.split(':')[1]);
  const serves = (row: string[]) =>
    row.slice(8).some((range) => {
      const [from, to = from] = range.split('-').map(Number);
      return from !== undefined && to !== undefined && slot >= from && slot <= to;
    });
  const master = rows.find((row) => row[2]!.includes('master') && !row[2]!.includes('fail') && serves(row));
  if (!master) throw new Error(`no live master serves slot ${slot}`);
  const replicas = rows.filter((row) => row[3] === master[0] && !row[2]!.includes('fail')).map(portOf);
  return { master: portOf(master), replicas };
}

/** Until the node's CLUSTER NODES shows `masters` masters, each with `replicas` replicas. */
async function waitForTopologySeen(port: number, masters: number, replicas: number): Promise<void> {
  await until(async () => {
    const { stdout } = await run('redis-cli', ['-p', String(port), 'cluster', 'nodes'], { timeout: 2_000 });
    const rows = stdout
      .trim()
      .split('\n')
      .map((line) => line.split(' '));
    const masterIds = rows.filter((row) => row[2]!.includes('master') && row.length > 8).map((row) => row[0]!);
    return masterIds.length === masters && masterIds.every((id) => rows.filter((row) => row[3] === id).length === replicas);
  });
}

async function firstAnswer<T>(ports: number[], ask: (port: number) => Promise<T>): Promise<T> {
  let last: unknown;
  for (const port of ports) {
    try {
      return await ask(port);
    } catch (error) {
      last = error;
    }
  }
  throw last instanceof Error ? last : new Error('no live cluster node', { cause: last });
}

async function until(check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error('Redis Cluster did not come up in time');
    await sleep(100);
  }
}
