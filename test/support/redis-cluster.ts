import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';

const run = promisify(execFile);

/** A throw-away Redis Cluster of `size` masters on spare loopback ports, for one test file. */
export interface TestCluster {
  nodes: string[];
  stop(): Promise<void>;
}

export async function startRedisCluster(size = 3): Promise<TestCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'hmdp-cluster-'));
  const children: ChildProcess[] = [];
  const killAll = () => children.forEach((child) => child.kill('SIGKILL'));
  process.once('exit', killAll); // never leak servers, even when the test run dies
  try {
    const ports: number[] = [];
    for (let i = 0; i < size; i += 1) {
      const port = await freeClusterPort(ports);
      ports.push(port);
      children.push(
        spawn('redis-server', [
          '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
          '--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${port}.conf`), '--dir', dir,
        ], { stdio: 'ignore' }),
      );
    }
    await Promise.all(ports.map((port) => waitForPing(port)));
    const nodes = ports.map((port) => `127.0.0.1:${port}`);
    await run('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', '0', '--cluster-yes']);
    await Promise.all(ports.map((port) => waitForClusterOk(port)));
    return {
      nodes,
      stop: async () => {
        killAll();
        await Promise.all(children.map((child) => (child.exitCode === null && child.signalCode === null ? new Promise((r) => child.once('exit', r)) : null)));
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    killAll();
    await rm(dir, { recursive: true, force: true });
    throw error;
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

async function waitForPing(port: number): Promise<void> {
  await until(async () => {
    const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    client.on('error', () => {}); // refused until the server is up: expected here
    try {
      await client.connect();
      return (await client.ping()) === 'PONG';
    } catch {
      return false;
    } finally {
      client.disconnect();
    }
  });
}

async function waitForClusterOk(port: number): Promise<void> {
  await until(async () => {
    const { stdout } = await run('redis-cli', ['-p', String(port), 'cluster', 'info']);
    return stdout.includes('cluster_state:ok');
  });
}

async function until(check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('Redis Cluster did not come up in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
