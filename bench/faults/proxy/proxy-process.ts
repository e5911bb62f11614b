/**
 * Toxic TCP proxies (tcp-proxy.ts) in a child process of their own, driven over IPC. The gray
 * scenarios put every byte between the app instances and Redis and MySQL through a proxy; in the
 * harness's process it would share one event loop with the load generator, so a busy generator
 * would delay Redis replies (and a busy proxy the requests): a fault of the harness, not the app.
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { Direction, Toxic } from './tcp-proxy.js';

const CHILD = new URL('./proxy-child.ts', import.meta.url).pathname;

export interface ProxyStats {
  connectionsAccepted: number;
  connectionsRefused: number;
  connectionsReset: number;
  openConnections: number;
  bytesForwarded: Record<Direction, number>;
}

/** A proxy in the proxy process: the same controls as TcpProxy, asynchronous. */
export interface RemoteProxy {
  readonly port: number;
  addToxic(name: string, toxic: Toxic, direction?: Direction | 'both'): Promise<void>;
  removeToxic(name: string): Promise<void>;
  reset(options?: { refuseNew?: boolean }): Promise<void>;
  restore(): Promise<void>;
  stats(): Promise<ProxyStats>;
}

export interface ProxyProcess {
  start(target: { host: string; port: number }): Promise<RemoteProxy>;
  /** Closes every proxy and ends the process. */
  close(): Promise<void>;
}

/** Messages to the child: an operation on a proxy (by index; `start` makes one). */
export interface ProxyRequest {
  id: number;
  op: 'start' | 'addToxic' | 'removeToxic' | 'reset' | 'restore' | 'stats';
  proxy?: number;
  args?: unknown[];
}

export type ProxyReply = { id: number; result?: unknown; error?: string };

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

export async function startProxyProcess(): Promise<ProxyProcess> {
  const child = fork(CHILD, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => children.delete(child));
  const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let nextId = 1;
  child.on('message', (message: ProxyReply) => {
    const waiter = waiting.get(message.id);
    waiting.delete(message.id);
    if (message.error !== undefined) waiter?.reject(new Error(`proxy process: ${message.error}`));
    else waiter?.resolve(message.result);
  });
  void exited.then(() => {
    for (const waiter of waiting.values()) waiter.reject(new Error('proxy process exited'));
    waiting.clear();
  });
  const call = (op: ProxyRequest['op'], proxy?: number, args?: unknown[]): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, { resolve, reject });
      child.send({ id, op, ...(proxy === undefined ? {} : { proxy }), ...(args ? { args } : {}) } satisfies ProxyRequest);
    });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve()); // the child says it is ready
    child.once('exit', (code) => reject(new Error(`proxy process exited (${String(code)}) before it was ready`)));
  });
  return {
    start: async (target) => {
      const { index, port } = (await call('start', undefined, [target])) as { index: number; port: number };
      return {
        port,
        addToxic: async (name, toxic, direction = 'both') => {
          await call('addToxic', index, [name, toxic, direction]);
        },
        removeToxic: async (name) => {
          await call('removeToxic', index, [name]);
        },
        reset: async (options = {}) => {
          await call('reset', index, [options]);
        },
        restore: async () => {
          await call('restore', index);
        },
        stats: async () => (await call('stats', index)) as ProxyStats,
      };
    },
    close: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
