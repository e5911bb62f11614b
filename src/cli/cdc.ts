import { createServer, type Server } from 'node:http';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { ConfigError, loadConfig, type Config } from '../infra/config.js';
import { createDb } from '../infra/db.js';
import { createMetrics, type Metrics } from '../infra/metrics.js';
import { bearerTokenMatcher } from '../infra/metrics-server.js';
import { closeRedis, createRedis } from '../infra/redis.js';
import { LockClient } from '../lib/lock/index.js';
import { buildCdc, type FollowerHealth } from '../modules/cdc/index.js';

/**
 * `npm run cdc`: the change follower (docs/flows/cdc.md), a process of its own; run two or more,
 * one follows while the others stand by. Options:
 *   --port N        GET /api/health and GET /metrics (with METRICS_TOKEN) on HOST:N (default 0: none)
 *   --server-id N   replica id of the binlog connection, unique among the server's replicas (default 4242)
 *   --lease-ms N    the active follower's lease: a standby takes over about this long after it died (default 3000)
 *   --stop-with-parent  stop (as on SIGTERM) once the process that started it has ended: scripts/start.sh
 *                   starts it, then execs the app in its own place, so the follower ends with the app
 * MYSQL_URL's user needs REPLICATION SLAVE, REPLICATION CLIENT and SELECT; the server log_bin on with binlog_format=ROW.
 */
const USAGE = 'usage: cdc [--port N] [--server-id N] [--lease-ms N] [--stop-with-parent]';

// Read first: a parent that ends while the follower starts up is noticed too.
const parentPid = process.ppid;
let config: Config;
let options: Options;
try {
  config = loadConfig();
  options = parseOptions(process.argv.slice(2));
} catch (error) {
  console.error(error instanceof ConfigError || error instanceof TypeError ? `cdc: ${error.message}` : error);
  process.exit(1);
}

const log = pino({ level: config.logLevel === 'silent' ? 'info' : config.logLevel });
const redis = createRedis(config, { onError: (err, skipped) => log.warn({ err, skipped }, 'redis connection error') });
const db = createDb({
  mysqlUrl: config.mysqlUrl,
  poolSize: 2,
  timeouts: { queryMs: config.deadlines.mysqlQueryMs, connectMs: config.deadlines.mysqlConnectMs },
});
const metrics = createMetrics();
const locks = new LockClient(redis, { defaultLeaseMs: options.leaseMs, pollMs: Math.max(100, Math.floor(options.leaseMs / 6)) });
const cdc = buildCdc({ config, redis, db, log, metrics, locks, serverId: options.serverId });
const stop = new AbortController();
const server = options.port > 0 ? await serve(cdc.health, metrics, options.port) : undefined;
log.info({ port: options.port, serverId: options.serverId, leaseMs: options.leaseMs }, 'change follower started');

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    log.info(`${signal} received, stopping the change follower`);
    stop.abort();
  });
}
if (options.stopWithParent) {
  whenParentEnds(parentPid, () => {
    log.info('its parent process ended, stopping the change follower');
    stop.abort();
  });
}

await cdc.run(stop.signal);
server?.close();
await locks.close();
await db.destroy();
await closeRedis(redis);
// A socket of a dependency gone silent must not keep a stopped follower alive.
setTimeout(() => process.exit(), 2_000).unref();

interface Options {
  port: number;
  serverId: number;
  leaseMs: number;
  stopWithParent: boolean;
}

function parseOptions(args: string[]): Options {
  const { values } = parseArgs({
    args,
    options: { port: { type: 'string' }, 'server-id': { type: 'string' }, 'lease-ms': { type: 'string' }, 'stop-with-parent': { type: 'boolean' } },
  });
  return {
    port: integer('--port', values.port, 0, 0, 65535),
    serverId: integer('--server-id', values['server-id'], 4242, 1, 2 ** 32 - 1),
    leaseMs: integer('--lease-ms', values['lease-ms'], 3_000, 300, 600_000),
    stopWithParent: values['stop-with-parent'] ?? false,
  };
}

/**
 * Calls `onEnded` once the parent process has ended, however it ended (SIGKILL too): an orphan is
 * adopted by another process, so its parent's pid changes. Checked every half second.
 */
function whenParentEnds(parent: number, onEnded: () => void): void {
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    onEnded();
  }, 500);
  timer.unref();
}

function integer(name: string, text: string | undefined, fallback: number, min: number, max: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) throw new TypeError(`${name} must be an integer in [${min}, ${max}]: ${text} (${USAGE})`);
  return value;
}

/** GET /api/health (the follower's role, position, gaps, errors) and GET /metrics for a scraper holding METRICS_TOKEN. */
async function serve(health: () => FollowerHealth, metrics: Metrics, port: number): Promise<Server> {
  const holdsToken = config.metricsToken === '' ? () => false : bearerTokenMatcher(config.metricsToken);
  const http = createServer((request, response) => {
    const path = request.url?.split('?')[0];
    if (request.method === 'GET' && path === '/api/health') {
      return void response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(health()));
    }
    if (request.method !== 'GET' || path !== '/metrics') return void response.writeHead(404).end();
    if (!holdsToken(request.headers.authorization)) return void response.writeHead(401, { 'www-authenticate': 'Bearer realm="metrics"' }).end();
    metrics.render().then(
      (text) => response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      () => response.writeHead(503, { 'retry-after': '1' }).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(port, config.host, () => resolve());
  });
  return http;
}
