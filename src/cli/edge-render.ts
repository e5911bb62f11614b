import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import type { Config } from '../infra/config.js';
import { installCors } from '../http/cors.js';
import { HTTP_MESSAGES } from '../http/http-messages.js';
import { APP_HELMET_OPTIONS, securityHeaders } from '../http/security-headers.js';
import { render, type Language, type Message } from '../lib/messages/index.js';
import { SaleKeys, SECKILL_MESSAGES } from '../modules/seckill/index.js';
import { SHOP_MESSAGES } from '../modules/shops/index.js';

/** The repository: src/cli and dist/cli are both two levels down. */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const EDGE_DIR = join(ROOT, 'edge');

/** What the edge's Lua reads tune (edge/README.md, "Settings"). */
export interface EdgeReadOptions {
  /** Answer reads at the edge at all (on when the app's Redis is a standalone redis:// or a Cluster). */
  enabled: boolean;
  /** Life of an L1 entry before its jitter (trusted that long while the push of changes works). */
  l1TtlMs: number;
  /** How long an L1 entry is trusted while the push of changes is down (or off). */
  l1UnpushedTtlMs: number;
  /** Drop L1 entries when the app announces a write of their record (a subscriber in worker 0). */
  push: boolean;
  /** Random 0..N % added to each L1 entry's life, so that entries made together do not end together. */
  l1JitterPercent: number;
  /** Size of the L1 shared dict, in nginx's units (`32m`). */
  l1Size: string;
  /** Longest connect, send or read of one Redis command; then the request goes to the app. */
  redisTimeoutMs: number;
  /** After a Redis failure, this worker goes straight to the app for this long. */
  redisBackoffMs: number;
  /** A larger Redis record goes to the app (logged once). */
  maxRecordBytes: number;
  /** Answer the sale's refusals already known (and the voucher lists' live stock) at the edge. */
  sales: boolean;
  /** A view of a sale is used only while the watcher's heartbeat came back within this (edge/README.md). */
  saleFreshMs: number;
  /** The watcher's heartbeat period (below saleFreshMs, by at least a round trip to Redis). */
  saleBeatMs: number;
  /** Least time between two readings of the sales' hashes by a worker's watcher (edge/sale.md, "A hot sale"). */
  saleReadGapMs: number;
}

export interface EdgeOptions {
  /** nginx's -p folder: its configuration, settings, pid, logs and temporary files. */
  prefix: string;
  /** `host:port` nginx listens on. */
  listen: string;
  /** `host:port` of the app instances of the sale's routes and of the rest of the site. */
  salePool: string[];
  sitePool: string[];
  /** Serve the web front end from this folder (web/dist); without it the app serves it. */
  webRoot?: string;
  workers?: number | 'auto';
  /** Per client address: order POSTs a second, more at once, requests in flight on the sale's routes. */
  orderRate: number;
  orderBurst: number;
  saleConn: number;
  /** Addresses or CIDRs never limited. */
  exempt: string[];
  reads: EdgeReadOptions;
}

export const DEFAULT_READS: EdgeReadOptions = {
  enabled: true,
  l1TtlMs: 30_000,
  l1UnpushedTtlMs: 1_000,
  push: true,
  l1JitterPercent: 20,
  l1Size: '32m',
  redisTimeoutMs: 100,
  redisBackoffMs: 1_000,
  maxRecordBytes: 64 * 1024,
  sales: true,
  saleFreshMs: 50,
  saleBeatMs: 10,
  saleReadGapMs: 100,
};

/**
 * `{{name}}` → the value; `{{#name}}…{{/name}}` kept when the value is on (non-empty),
 * `{{^name}}…{{/name}}` when it is off. Sections may nest, a name may not be missing: a typo in the
 * template fails the render instead of leaving a placeholder in nginx.conf.
 */
export function renderTemplate(template: string, values: Record<string, string | boolean>): string {
  const sections = /\{\{([#^])(\w+)\}\}\n?([\s\S]*?)\{\{\/\2\}\}\n?/g;
  let text = template;
  // Outer sections first, until none is left (one inside another of the same name is not supported).
  for (let previous = ''; previous !== text;) {
    previous = text;
    text = text.replace(sections, (_whole, kind: string, name: string, body: string) => {
      const on = Boolean(valueOf(values, name));
      return (kind === '#') === on ? body : '';
    });
  }
  return text.replace(/\{\{(\w+)\}\}/g, (_whole, name: string) => String(valueOf(values, name)));
}

function valueOf(values: Record<string, string | boolean>, name: string): string | boolean {
  if (!(name in values)) throw new Error(`edge template: no value for {{${name}}}`);
  return values[name]!;
}

/**
 * Where the edge's Redis reads go: the app's standalone Redis, or the seed nodes of its Cluster
 * (as src/infra/redis.ts connects to it: no password); none for TLS (rediss://: not supported by
 * the edge's reads).
 */
export function edgeRedis(config: Pick<Config, 'redisUrl' | 'redisClusterNodes'>) {
  if (config.redisClusterNodes.length > 0) {
    const cluster = config.redisClusterNodes.map((node) => {
      const at = node.lastIndexOf(':');
      return { host: node.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(node.slice(at + 1)) };
    });
    return { cluster };
  }
  const url = new URL(config.redisUrl);
  if (url.protocol !== 'redis:') return null;
  const db = Number(url.pathname.replace(/^\//, '') || '0');
  return {
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: Number(url.port || '6379'),
    db: Number.isInteger(db) ? db : 0,
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
  };
}

/** The app's error answer for a message: `{success: false, errorMsg}` in the language (src/http/error-answers.ts). */
const errorBody = (message: Message, language: Language): string => JSON.stringify({ success: false, errorMsg: render(message, language) });

/**
 * A message's JSON error body split around its `{id}`: the Lua puts the id between the two halves,
 * so the text and its JSON escaping are the app's own (JSON.stringify of `{success, errorMsg}`).
 */
function bodyAroundId(message: (params: { id: string }) => Message, language: Language): [string, string] {
  const marker = 'EDGE-ID-MARKER';
  const body = errorBody(message({ id: marker }), language);
  const parts = body.split(marker);
  if (parts.length !== 2) throw new Error(`edge: message ${message({ id: marker }).code} must name {id} once`);
  return parts as [string, string];
}

/**
 * The headers the app's CORS adds to an answer to a request without an Origin (`vary: Origin`,
 * the exposed headers), from the app's own CORS setup: none when CORS_ORIGINS is empty.
 */
async function corsHeaders(origins: string[]): Promise<Record<string, string>> {
  if (origins.length === 0) return {};
  const app = Fastify();
  try {
    await installCors(app, origins);
    app.get('/', () => '');
    const { headers } = await app.inject({ url: '/' });
    return Object.fromEntries(
      Object.entries(headers).flatMap(([name, value]) => (name === 'vary' || name.startsWith('access-control-') ? [[name, String(value)]] : [])),
    );
  } finally {
    await app.close();
  }
}

/**
 * The settings the Lua reads at start (hmdp.edge.settings): the app's where the app decides. Reads
 * are answered here only when the edge can answer them as the app does: a standalone Redis
 * (redis://) or a Cluster, and no API_RATE_LIMIT_PER_IP (the app would count each request and add its
 * x-ratelimit headers).
 */
export async function edgeSettings(config: Config, reads: EdgeReadOptions) {
  const redis = edgeRedis(config);
  // The sale's order route has no API rate limit (it has its own, which a refusal need not pass).
  const sales = reads.sales && redis !== null;
  return {
    reads: reads.enabled && redis !== null && config.rateLimit.apiPerIp === 0,
    // refreshMs: on a Cluster, the slot map is asked for at most this often (after a MOVED, a failed node).
    redis: redis && { ...redis, timeoutMs: reads.redisTimeoutMs, backoffMs: reads.redisBackoffMs, poolSize: 64, idleMs: 60_000, refreshMs: 100 },
    keyPrefix: config.redisKeyPrefix,
    push: reads.push,
    l1: { ttlMs: reads.l1TtlMs, unpushedTtlMs: Math.min(reads.l1UnpushedTtlMs, reads.l1TtlMs), jitterPercent: reads.l1JitterPercent },
    maxRecordBytes: reads.maxRecordBytes,
    defaultLanguage: config.defaultLanguage,
    // With CORS on, a request naming an Origin may get CORS headers from the app: it goes there.
    passOrigin: config.http.corsOrigins.length > 0,
    // Every answer of the app carries these (src/app.ts): helmet's, and CORS' when it is on.
    headers: { ...securityHeaders(APP_HELMET_OPTIONS), ...(await corsHeaders(config.http.corsOrigins)) },
    messages: {
      shopNotFound: { zh: bodyAroundId(SHOP_MESSAGES.shopNotFound, 'zh'), en: bodyAroundId(SHOP_MESSAGES.shopNotFound, 'en') },
      saleRefusals: saleRefusalBodies(),
    },
    sales: sales && saleSettings(config, reads),
    visits: { enabled: config.social.uvTracking, flushMs: config.social.uvFlushMs > 0 ? config.social.uvFlushMs : 1_000 },
  };
}

/**
 * What the sale's watcher needs of the app (edge/lua/hmdp/edge/sale_keys.lua): the shard count and
 * the bucket lanes' hash tags, from the app's own SaleKeys, so that both name the same keys.
 */
function saleSettings(config: Config, reads: EdgeReadOptions) {
  const shards = config.seckill.streamShards;
  const keys = new SaleKeys(shards, true);
  return {
    shards,
    laneTags: keys.laneShards().map((shard) => keys.shard(shard).tag),
    freshMs: reads.saleFreshMs,
    beatMs: Math.min(reads.saleBeatMs, reads.saleFreshMs),
    readGapMs: reads.saleReadGapMs,
    // The subscriber's longest silence before it starts over: heartbeats come every beatMs.
    silenceMs: Math.max(1_000, 10 * reads.saleBeatMs),
    maxViews: 10_000,
  };
}

/** The order route's refusals by the sale's outcome (SaleRefused), each body as the app writes it, per language. */
function saleRefusalBodies() {
  const messages = {
    'not-started': SECKILL_MESSAGES.notStarted(),
    ended: SECKILL_MESSAGES.ended(),
    suspended: SECKILL_MESSAGES.suspended(),
    'sold-out': SECKILL_MESSAGES.soldOut(),
  };
  return Object.fromEntries(Object.entries(messages).map(([outcome, message]) => [outcome, { zh: errorBody(message, 'zh'), en: errorBody(message, 'en') }]));
}

/** The nginx `user` line a root master needs so that its workers read the files as their owner. */
function userLine(path: string): string {
  if (process.getuid?.() !== 0) return '';
  const owner = execFileSync('stat', ['-c', '%U %G', path], { encoding: 'utf8' }).trim();
  return `user ${owner};`;
}

/**
 * answer-headers.conf, included where nginx sends an answer itself (the sale's refusals, L1's
 * reads): the app's headers as `add_header` lines, `always` (a 404 too), and the request's id. A
 * value nginx would read as a variable or could not hold in a quoted string fails the render.
 */
export function answerHeaderLines(headers: Record<string, string>): string {
  const lines = Object.entries(headers).map(([name, value]) => {
    // Printable ASCII (space to tilde) but for the quote, the backslash and nginx's "$".
    if (!/^[\w-]+$/.test(name) || !/^[ -~]*$/.test(value) || /[$\\"]/.test(value))
      throw new Error(`edge: the header ${name}: ${value} cannot be written into nginx.conf`);
    return `add_header ${name} "${value}" always;\n`;
  });
  return `# Written by src/cli/edge-render.ts: the app's headers on an answer nginx sends itself.\n${lines.join('')}add_header x-request-id $hmdp_request_id always;\n`;
}

const serverLines = (pool: string[]): string => pool.map((address) => `    server ${address} max_fails=1 fail_timeout=2s;\n`).join('');

/**
 * Writes an edge instance's folder: nginx.conf from edge/nginx.conf.template, edge-settings.json
 * (the Lua's settings, readable by the master only: it may hold Redis' password), answer-headers.conf
 * (the app's headers on the answers nginx sends itself), the 429 pages
 * and the log and temp folders. Returns the path of nginx.conf.
 */
export async function writeEdge(config: Config, options: EdgeOptions): Promise<string> {
  const { prefix } = options;
  if (options.salePool.length === 0 || options.sitePool.length === 0) throw new Error('edge: both pools need an instance');
  for (const folder of ['logs', 'temp', 'pages']) mkdirSync(join(prefix, folder), { recursive: true });
  const settings = await edgeSettings(config, options.reads);
  const settingsFile = join(prefix, 'edge-settings.json');
  writeFileSync(settingsFile, `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o600 });
  chmodSync(settingsFile, 0o600);
  writePages(join(prefix, 'pages'));
  writeFileSync(join(prefix, 'answer-headers.conf'), answerHeaderLines(settings.headers));
  const conf = renderTemplate(readFileSync(join(EDGE_DIR, 'nginx.conf.template'), 'utf8'), {
    user_line: userLine(options.webRoot ?? EDGE_DIR),
    workers: String(options.workers ?? 'auto'),
    prefix,
    edge_dir: EDGE_DIR,
    lua_dir: join(EDGE_DIR, 'lua'),
    l1_size: options.reads.l1Size,
    listen: options.listen,
    exempt: options.exempt.map((address) => `    ${address} 1;\n`).join(''),
    order_rate: String(options.orderRate),
    order_burst: String(options.orderBurst),
    sale_conn: String(options.saleConn),
    sale_servers: serverLines(options.salePool),
    site_servers: serverLines(options.sitePool),
    web_root: options.webRoot ?? '',
    reads: settings.reads,
    sales: Boolean(settings.sales),
    compat: config.hmdpCompat,
  });
  const confFile = join(prefix, 'nginx.conf');
  writeFileSync(confFile, conf);
  return confFile;
}

/**
 * The edge's 429 and 503 answers: the API's wrapper with the order route's "too many from this address"
 * message, or "unreachable" when no app instance answered, in each language (the app's catalogue, so
 * the texts live in one place), and for a page request the static "活动太火爆" page
 * (ops/nginx/sale-busy.html) or both texts of "unreachable".
 */
function writePages(folder: string): void {
  const down = HTTP_MESSAGES.appUnreachable({ seconds: 1 });
  for (const language of ['zh', 'en'] as const) {
    writeFileSync(join(folder, `429.${language}.json`), errorBody(SECKILL_MESSAGES.tooManyFromAddress({ seconds: 1 }), language));
    writeFileSync(join(folder, `503.${language}.json`), errorBody(down, language));
  }
  copyFileSync(join(ROOT, 'ops/nginx/sale-busy.html'), join(folder, '429.html'));
  writeFileSync(join(folder, '503.html'), `<!doctype html><meta charset="utf-8"><title>503</title><p>${render(down, 'zh')}</p><p>${render(down, 'en')}</p>\n`);
}
