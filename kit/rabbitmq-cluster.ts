import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freeRange, isFree } from './ports.js';

const run = promisify(execFile);
const TOPOLOGY_SCRIPT = fileURLToPath(new URL('../scripts/topology.sh', import.meta.url));
const NODES = 3;

/** A queue as `rabbitmqctl list_queues` reports it. */
export interface QueueState {
  name: string;
  type: string;
  /** Ready and unacknowledged. */
  messages: number;
  leader: string;
  members: string[];
  online: string[];
}

/** A vhost of its own on the cluster (guest has every permission on it); deleting it deletes its queues. */
export interface ClusterVhost {
  name: string;
  /** RABBITMQ_URL for the app: every node, comma-separated, with this vhost. */
  url: string;
  delete(): Promise<void>;
}

/**
 * scripts/topology.sh's 3-node RabbitMQ cluster (`broker`), on free loopback ports and a folder of
 * its own, for fault scenarios: nodes can be killed, all stopped (their data kept) and started
 * again. The machine's broker is never touched. Nodes still running when the process exits are
 * SIGKILLed.
 */
export interface RabbitmqCluster {
  /** AMQP ports, the first node's first. */
  ports: number[];
  nodeName(port: number): string;
  portOf(nodeName: string): number;
  /** The node's Erlang VM, from its pid file (undefined when it is not running). */
  pid(port: number): Promise<number | undefined>;
  kill(port: number, signal: NodeJS.Signals): Promise<void>;
  /** SIGTERM to every running node (a clean shutdown, data kept); resolves once all have exited. */
  stopAll(): Promise<void>;
  /** Starts the nodes that are not running and waits until they have booted and joined. */
  startMissing(): Promise<void>;
  /** Every node's pid alive and its AMQP port answering. */
  whole(): Promise<boolean>;
  /** rabbitmqctl -q against one node (default: the first running one); its stdout. */
  rabbitmqctl(args: string[], port?: number): Promise<string>;
  addVhost(): Promise<ClusterVhost>;
  queues(vhost: string, port?: number): Promise<QueueState[]>;
  /** Stops every node and removes the folder. */
  stop(): Promise<void>;
}

export async function startRabbitmqCluster(): Promise<RabbitmqCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'hmdp-rabbitmq-cluster-'));
  // AMQP ports, their Erlang distribution ports (+20000) and the CLI's (+30000) free.
  const base = await freeRange(NODES, [20_000, 30_000]);
  const ports = Array.from({ length: NODES }, (_, i) => base + i);
  // TOPOLOGY_DB names a database nobody has: the script only reads it (`down --purge` is never run here).
  const env = {
    ...(process.env as Record<string, string>),
    TOPOLOGY_DIR: dir,
    TOPOLOGY_QUEUE: 'rabbitmq',
    TOPOLOGY_RABBITMQ_BASE_PORT: String(base),
    TOPOLOGY_DB: `hmdp_unused_${randomBytes(4).toString('hex')}`,
  };
  const topology = async (...args: string[]): Promise<string> => {
    try {
      return (await run('bash', [TOPOLOGY_SCRIPT, ...args], { env, timeout: 180_000, maxBuffer: 10 * 1024 * 1024 })).stdout;
    } catch (error) {
      const failed = error as { stdout?: string; stderr?: string; message: string };
      throw new Error(`scripts/topology.sh ${args.join(' ')} failed:\n${failed.stdout ?? ''}${failed.stderr ?? ''}\n${failed.message}`, { cause: error });
    }
  };
  const nodeName = (port: number) => `hmdp-topology-${port}@localhost`;
  const pid = async (port: number): Promise<number | undefined> => {
    const text = await readFile(join(dir, 'run', `rabbitmq-${port}.pid`), 'utf8').catch(() => '');
    const value = Number(text.trim());
    return value > 0 && alive(value) ? value : undefined;
  };
  const known = new Set<number>();
  const remember = async () => {
    for (const port of ports) {
      const value = await pid(port);
      if (value !== undefined) known.add(value);
    }
  };
  const killKnown = () => {
    for (const value of known) if (alive(value)) process.kill(value, 'SIGKILL');
  };
  process.once('exit', killKnown);
  const firstRunning = async () => {
    for (const port of ports) if ((await pid(port)) !== undefined) return port;
    throw new Error('no RabbitMQ node of the cluster is running');
  };
  const rabbitmqctl = async (args: string[], port?: number) => topology('rabbitmqctl', '-n', nodeName(port ?? (await firstRunning())), '-q', ...args);
  const cluster: RabbitmqCluster = {
    ports,
    nodeName,
    portOf: (name) => {
      const port = ports.find((candidate) => nodeName(candidate) === name);
      if (port === undefined) throw new Error(`${name} is no node of this cluster`);
      return port;
    },
    pid,
    kill: async (port, signal) => {
      const value = await pid(port);
      if (value !== undefined) process.kill(value, signal);
    },
    stopAll: async () => {
      const running = (await Promise.all(ports.map(pid))).filter((value): value is number => value !== undefined);
      for (const value of running) process.kill(value, 'SIGTERM');
      const deadline = Date.now() + 60_000;
      while (running.some(alive)) {
        if (Date.now() > deadline) throw new Error('RabbitMQ nodes did not stop within 60 s of SIGTERM');
        await sleep(100);
      }
    },
    startMissing: async () => {
      await topology('broker');
      await remember();
    },
    whole: async () => (await Promise.all(ports.map(async (port) => (await pid(port)) !== undefined && !(await isFree(port))))).every(Boolean),
    rabbitmqctl,
    addVhost: async () => {
      const name = `hmdp_fault_${randomBytes(4).toString('hex')}`;
      await rabbitmqctl(['add_vhost', name]);
      await rabbitmqctl(['set_permissions', '-p', name, 'guest', '.*', '.*', '.*']);
      return {
        name,
        url: ports.map((port) => `amqp://guest:guest@127.0.0.1:${port}/${name}`).join(','),
        delete: async () => {
          await rabbitmqctl(['delete_vhost', name]);
        },
      };
    },
    queues: async (vhost, port) =>
      JSON.parse(
        await rabbitmqctl(['list_queues', '-p', vhost, 'name', 'type', 'messages', 'leader', 'members', 'online', '--formatter', 'json'], port),
      ) as QueueState[],
    stop: async () => {
      try {
        await topology('down');
      } finally {
        killKnown();
        process.removeListener('exit', killKnown);
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
  try {
    await cluster.startMissing();
    return cluster;
  } catch (error) {
    await cluster.stop().catch(() => undefined);
    throw error;
  }
}

/** Whether the process runs: a zombie (killed, not yet reaped by an init that may never reap it) does not. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}
