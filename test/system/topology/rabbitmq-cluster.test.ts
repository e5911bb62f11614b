import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Connection } from 'rabbitmq-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freeRange, isFree } from '../../../kit/ports.js';

/**
 * scripts/topology.sh's RabbitMQ cluster (TOPOLOGY_QUEUE=rabbitmq) on its own, without the rest
 * of the topology or the app's broker path: three nodes of its own on free loopback ports, joined
 * into one cluster beside the machine's broker (rabbit@localhost, 5672), which stays untouched.
 */
const run = promisify(execFile);
const MACHINE_BROKER_PORT = 5672;

let dir: string;
let env: Record<string, string>;
let base: number;
let nodes: string[];

const topology = async (...args: string[]) => {
  try {
    return await run('bash', ['scripts/topology.sh', ...args], { env, timeout: 180_000, maxBuffer: 10 * 1024 * 1024 });
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`scripts/topology.sh ${args.join(' ')} failed:\n${failed.stdout ?? ''}${failed.stderr ?? ''}\n${failed.message}`, { cause: error });
  }
};
const rabbitmqctl = async (...args: string[]) => (await topology('rabbitmqctl', '-q', ...args)).stdout;
const pidOf = async (port: number) => Number(await readFile(join(dir, 'run', `rabbitmq-${port}.pid`), 'utf8'));
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hmdp-rabbitmq-'));
  // AMQP ports, their distribution ports (+20000) and the CLI's (+30000) free.
  base = await freeRange(3, [20_000, 30_000]);
  nodes = [0, 1, 2].map((i) => `hmdp-topology-${base + i}@localhost`);
  env = { ...(process.env as Record<string, string>), TOPOLOGY_DIR: dir, TOPOLOGY_QUEUE: 'rabbitmq', TOPOLOGY_RABBITMQ_BASE_PORT: String(base) };
  expect(await isFree(MACHINE_BROKER_PORT)).toBe(false); // the machine's broker runs
  const started = performance.now();
  await topology('broker');
  console.log(`rabbitmq cluster: 3 nodes started and joined in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}, 180_000);

afterAll(async () => {
  // Not --purge: that also drops the topology's database (TOPOLOGY_DB, hmdp_topology by default), which this test never made.
  if (env) await topology('down');
  if (dir) await rm(dir, { recursive: true, force: true });
}, 60_000);

describe('scripts/topology.sh broker (TOPOLOGY_QUEUE=rabbitmq)', () => {
  it('runs three nodes of its own, joined into one cluster, beside the machine broker', async () => {
    const status = JSON.parse(await rabbitmqctl('cluster_status', '--formatter', 'json')) as { running_nodes: string[]; disk_nodes: string[] };
    expect([...status.running_nodes].sort()).toEqual(nodes);
    expect([...status.disk_nodes].sort()).toEqual(nodes);
    for (const port of [base, base + 1, base + 2]) expect(await isFree(port)).toBe(false);
    expect(await isFree(MACHINE_BROKER_PORT)).toBe(false);
    const { stdout } = await topology('status');
    expect(stdout.match(/rabbitmq :\d+\s+pid \d+/g)).toHaveLength(3);
    expect(stdout).toContain(`running nodes: ${nodes.join(' ')}`);
  });

  it('replicates a quorum queue declared on it to all three nodes', async () => {
    // Declared as the app does, with its AMQP client, on the first node.
    const rabbit = new Connection({ url: `amqp://guest:guest@127.0.0.1:${base}`, connectionTimeout: 10_000 });
    try {
      await rabbit.queueDeclare({ queue: 'topology-check', durable: true, arguments: { 'x-queue-type': 'quorum' } });
    } finally {
      await rabbit.close();
    }
    const queues = JSON.parse(await rabbitmqctl('list_queues', 'name', 'type', 'members', 'online', '--formatter', 'json')) as Array<{
      name: string;
      type: string;
      members: string[];
      online: string[];
    }>;
    const queue = queues.find((candidate) => candidate.name === 'topology-check');
    expect(queue?.type).toBe('quorum');
    expect([...(queue?.members ?? [])].sort()).toEqual(nodes);
    // Its followers report from the other nodes too.
    const onThird = JSON.parse(await rabbitmqctl('-n', nodes[2]!, 'list_queues', 'name', 'online', '--formatter', 'json')) as Array<{ online: string[] }>;
    expect([...(onThird[0]?.online ?? [])].sort()).toEqual(nodes);
  });

  it('hands the app SECKILL_QUEUE=rabbitmq and RABBITMQ_URL naming the three nodes', async () => {
    const { stdout } = await topology('env');
    expect(stdout).toContain('SECKILL_QUEUE=rabbitmq\n');
    expect(stdout).toContain(`RABBITMQ_URL=${[base, base + 1, base + 2].map((port) => `amqp://guest:guest@127.0.0.1:${port}`).join(',')}\n`);
  });

  it('stops its nodes by their pids on down, and only them', async () => {
    const pids = await Promise.all([base, base + 1, base + 2].map(pidOf));
    expect(pids.every(alive)).toBe(true);
    await topology('down');
    expect(pids.some(alive)).toBe(false);
    for (const port of [base, base + 1, base + 2]) expect(await isFree(port)).toBe(true);
    expect(await isFree(MACHINE_BROKER_PORT)).toBe(false);
  });
});
