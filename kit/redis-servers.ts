import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

const REDIS_SERVER = process.env.REDIS_SERVER_BIN ?? 'redis-server';
const started = new Set<ChildProcess>();

// Never leak a server, even when the process (a test, a benchmark) dies of a failure or a timeout.
process.on('exit', () => {
  for (const server of started) server.kill('SIGKILL');
});

/** An extra, throw-away redis-server on a spare loopback port (no persistence unless asked). */
export interface RedisServer {
  readonly port: number;
  readonly url: string;
  /** SIGKILL: the server is gone, connections are refused. */
  kill(): Promise<void>;
  /** SIGSTOP: the server hangs, connections stay open but nothing is answered. */
  pause(): void;
  resume(): void;
}

/** Asks the kernel for a free port: listen on port 0, read it, close. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface RedisServerOptions {
  /** A given port (e.g. to restart a killed server where its clients expect it); default a free one. */
  port?: number;
  /** Working directory (AOF / RDB files); default the current one, unused without persistence. */
  dir?: string;
  /** Persistence: `appendonly yes` with this fsync policy; default none. */
  appendfsync?: 'always' | 'everysec' | 'no';
}

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  if (options.port !== undefined) return startOn(options.port, options);
  // Another process may take the port between freePort() and the bind: try a few ports.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      return await startOn(port, options);
    } catch (error) {
      if (attempt >= 3) throw error;
    }
  }
}

function startOn(port: number, options: RedisServerOptions): Promise<RedisServer> {
  const persistence = options.appendfsync ? ['--appendonly', 'yes', '--appendfsync', options.appendfsync] : ['--appendonly', 'no'];
  const child = spawn(
    REDIS_SERVER,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...persistence, '--daemonize', 'no', ...(options.dir ? ['--dir', options.dir] : [])],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  started.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => started.delete(child));
  const server: RedisServer = {
    port,
    url: `redis://127.0.0.1:${port}`,
    kill: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
  };
  return new Promise((resolve, reject) => {
    let log = '';
    let ready = false;
    const timer = setTimeout(() => fail(new Error(`redis-server on ${port} not ready in 10 s: ${log}`)), 10_000);
    const fail = (error: Error): void => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    };
    child.once('error', fail);
    child.once('exit', () => {
      if (!ready) fail(new Error(`redis-server on ${port} exited: ${log}`));
    });
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      log += chunk;
      if (!ready && log.includes('Ready to accept connections')) {
        ready = true;
        clearTimeout(timer);
        resolve(server);
      }
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
  });
}

/** Kills all servers this process started (afterAll). */
export async function stopRedisServers(servers: readonly RedisServer[]): Promise<void> {
  await Promise.all(
    servers.map(async (server) => {
      server.resume(); // a SIGSTOPped process still dies of SIGKILL, but be explicit
      await server.kill();
    }),
  );
}
