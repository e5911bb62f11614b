import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startRedisCluster } from './redis-cluster.js';

const run = promisify(execFile);

/**
 * A throw-away Redis Cluster of 3 masters, each with one replica: startRedisCluster's masters
 * plus a replica node added to each with `redis-cli --cluster add-node --cluster-slave`.
 * Temporary: test/support/redis-cluster.ts is growing a `replicas` option on another branch;
 * once merged, this file should become a call of it.
 */
export interface ReplicatedCluster {
  nodes: string[];
  shards: Array<{ masterPort: number; replicaPort: number; replica: ChildProcess }>;
  /** The shard (master + replica) serving a hash slot. */
  shardOfSlot(slot: number): Promise<ReplicatedCluster['shards'][number]>;
  stop(): Promise<void>;
}

export async function startReplicatedCluster(): Promise<ReplicatedCluster> {
  const base = await startRedisCluster(3);
  const dir = await mkdtemp(join(tmpdir(), 'hmdp-replicas-'));
  const replicas: ChildProcess[] = [];
  const killReplicas = () => replicas.forEach((child) => child.kill('SIGKILL'));
  process.once('exit', killReplicas);
  const stop = async () => {
    replicas.forEach((child) => child.kill('SIGCONT'));
    killReplicas();
    await Promise.all(replicas.map((child) => (child.exitCode === null && child.signalCode === null ? new Promise((r) => child.once('exit', r)) : null)));
    await base.stop();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const shards: ReplicatedCluster['shards'] = [];
    for (const master of base.nodes) {
      const masterPort = Number(master.split(':')[1]);
      const replicaPort = await freePortPair([masterPort, ...shards.map((shard) => shard.replicaPort)]);
      const replica = spawn('redis-server', [
        '--port', String(replicaPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
        '--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${replicaPort}.conf`), '--dir', dir,
      ], { stdio: 'ignore' });
      replicas.push(replica);
      await until(async () => (await cli(replicaPort, 'ping').catch(() => '')).includes('PONG'));
      const masterId = (await cli(masterPort, 'cluster', 'myid')).trim();
      await run('redis-cli', ['--cluster', 'add-node', `127.0.0.1:${replicaPort}`, master, '--cluster-slave', '--cluster-master-id', masterId]);
      shards.push({ masterPort, replicaPort, replica });
    }
    for (const { replicaPort } of shards) {
      await until(async () => (await cli(replicaPort, 'info', 'replication')).includes('master_link_status:up'));
    }
    const nodes = [...base.nodes, ...shards.map((shard) => `127.0.0.1:${shard.replicaPort}`)];
    const shardOfSlot = async (slot: number) => {
      // CLUSTER SLOTS: [start, end, [host, port, id], replicas...] per range; asked of a master.
      const { stdout } = await run('redis-cli', ['-p', String(shards[0]!.masterPort), '--json', 'cluster', 'slots']);
      const ranges = JSON.parse(stdout) as Array<[number, number, [string, number, string], ...unknown[]]>;
      const range = ranges.find(([start, end]) => start <= slot && slot <= end);
      const shard = shards.find((candidate) => candidate.masterPort === range?.[2][1]);
      if (!shard) throw new Error(`no shard serves slot ${slot}`);
      return shard;
    };
    return { nodes, shards, shardOfSlot, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function cli(port: number, ...args: string[]): Promise<string> {
  return (await run('redis-cli', ['-p', String(port), ...args])).stdout;
}

async function freePortPair(taken: number[]): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    if (!taken.includes(port) && (await isFree(port)) && (await isFree(port + 10_000))) return port;
  }
  throw new Error('no free port pair for a replica node');
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

async function until(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('replica did not come up in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
