import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../src/infra/config.js';
import { DEFAULT_READS, EDGE_DIR, writeEdge, type EdgeOptions, type EdgeReadOptions } from '../src/cli/edge-render.js';
import { accepting } from './ports.js';
import { freePort } from './redis-servers.js';

const started = new Set<ChildProcess>();

// The master in the foreground is this process' child; SIGTERM (not SIGKILL) lets it take its
// workers down with it, whatever ends this process.
process.on('exit', () => {
  for (const master of started) master.kill('SIGTERM');
});

/** An nginx of the edge (edge/nginx.conf.template) on a free loopback port, in a folder of its own. */
export interface Edge {
  readonly port: number;
  readonly url: string;
  /** The master's pid (its workers are its children): what the bench counts nginx's CPU by. */
  readonly pid: number;
  /** nginx's -p folder: nginx.conf, edge-settings.json, logs/. */
  readonly prefix: string;
  /** The error log so far (warnings of the Lua: malformed records, Redis failures). */
  errorLog(): Promise<string>;
  /** Stops the master (and so its workers) by its pid and removes the folder. */
  stop(): Promise<void>;
}

export interface StartEdgeOptions {
  /** `host:port` of the app instances; the site's pool defaults to the sale's. */
  salePool: string[];
  sitePool?: string[];
  workers?: number;
  reads?: Partial<EdgeReadOptions>;
  /** Serve the web front end from this folder (web/dist), as the topology does; without it the app serves it. */
  webRoot?: string;
  /**
   * Where the edge reads Redis instead of the app's REDIS_URL (same database and credentials
   * rules): a test puts a fault proxy between the edge and the app's Redis this way.
   */
  redisUrl?: string;
}

/** The nginx binary, its Lua modules and libraries installed with apt-get when missing (edge/packages.sh). */
export function ensureEdgePackages(): string {
  return execFileSync('bash', [join(EDGE_DIR, 'packages.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

/** Renders the edge for the app's `config` (as scripts/edge.sh does) and starts it. */
export async function startEdge(config: Config, options: StartEdgeOptions): Promise<Edge> {
  const nginx = ensureEdgePackages();
  const prefix = await mkdtemp(join(tmpdir(), 'hmdp-edge-'));
  const port = await freePort();
  const edgeOptions: EdgeOptions = {
    prefix,
    listen: `127.0.0.1:${port}`,
    salePool: options.salePool,
    sitePool: options.sitePool ?? options.salePool,
    workers: options.workers ?? 1,
    orderRate: 5,
    orderBurst: 10,
    saleConn: 16,
    exempt: ['127.0.0.1'],
    reads: { ...DEFAULT_READS, ...options.reads },
    ...(options.webRoot === undefined ? {} : { webRoot: options.webRoot }),
  };
  const conf = await writeEdge(options.redisUrl === undefined ? config : { ...config, redisUrl: options.redisUrl }, edgeOptions);
  const master = spawn(nginx, ['-p', prefix, '-c', conf, '-e', join(prefix, 'logs/error.log'), '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'pipe'] });
  started.add(master);
  let stderr = '';
  master.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<void>((resolve) => master.once('exit', () => resolve()));
  void exited.then(() => started.delete(master));
  const errorLog = async (): Promise<string> => readFile(join(prefix, 'logs/error.log'), 'utf8').catch(() => '');
  for (let waited = 0; !(await accepting(port)); waited += 50) {
    if (master.exitCode !== null || waited > 10_000) {
      master.kill('SIGTERM');
      throw new Error(`the edge's nginx did not start on ${port}: ${stderr}${await errorLog()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    pid: master.pid!,
    prefix,
    errorLog,
    stop: async () => {
      if (master.exitCode === null && master.signalCode === null) {
        master.kill('SIGTERM');
        await exited;
      }
      await rm(prefix, { recursive: true, force: true });
    },
  };
}
