/**
 * Server processes of a run. Each scenario gets an app instance of its own, in its own process,
 * so that the load generator never shares the server's event loop and one scenario's leftovers
 * (JIT state, pools, a worker still writing) never flatter or burden the next.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { compiledServerEntry } from './compiled-server.js';

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

export interface ServerOptions {
  env: Record<string, string>;
  /** Directory for `node --cpu-prof`; the profile is written when the server exits. */
  cpuProfDir?: string;
  /** Gets every line the server writes to stdout once it listens (its log); default: copied to stderr. */
  onLine?: (line: string) => void;
}

/** METRICS_TOKEN of the bench's servers: /metrics exists only with one. */
export const BENCH_METRICS_TOKEN = 'bench-metrics-token-0123456789';

/**
 * PURCHASE_TOKEN_KEYS of the bench's servers (production needs one): the environment's (a
 * `--target` deployment's keys, for the gated scenario), else one random key per run.
 */
export const BENCH_PURCHASE_TOKEN_KEYS = process.env.PURCHASE_TOKEN_KEYS || `bench:${randomBytes(32).toString('hex')}`;

/** A scrape of a bench server's `GET /metrics`. */
export const scrapeMetrics = (url: string): Promise<Response> => fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${BENCH_METRICS_TOKEN}` } });

/**
 * The whole environment of a bench server given `env`: also what an edge in front of it is
 * rendered from (loadConfig), so that both read the same settings.
 */
export function serverEnvironment(env: Record<string, string>): Record<string, string | undefined> {
  return {
    ...process.env,
    // No SMS in a benchmark: production refuses to start unless the log sender is chosen explicitly.
    // The load sends no Accept-Language, and the reports and checks read refusals in English.
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    SMS_SENDER: 'log',
    METRICS_TOKEN: BENCH_METRICS_TOKEN,
    DEFAULT_LANGUAGE: 'en',
    PURCHASE_TOKEN_KEYS: BENCH_PURCHASE_TOKEN_KEYS,
    ...env,
  };
}

export async function startServer(options: ServerOptions): Promise<ServerProcess> {
  const profiling = options.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfDir}`] : [];
  const child = spawn(process.execPath, [...profiling, await compiledServerEntry()], {
    env: serverEnvironment(options.env),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  for await (const line of lines) {
    if (line.startsWith('{"listening"')) {
      const { port } = JSON.parse(line) as { port: number };
      lines.on('line', options.onLine ?? ((rest) => process.stderr.write(`[server] ${rest}\n`)));
      return { url: `http://127.0.0.1:${port}`, child, stop: () => stopProcess(child) };
    }
    process.stderr.write(`[server] ${line}\n`);
  }
  throw new Error(`bench server exited (${child.signalCode ?? `code ${child.exitCode ?? '?'}`}) before listening`);
}

/** SIGTERM, then SIGKILL after 15 s; resolves when the process is gone. */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}
