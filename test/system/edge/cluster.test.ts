import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import calculateSlot from 'cluster-key-slot';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EDGE_DIR } from '../../../src/cli/edge-render.js';
import type { Config } from '../../../src/infra/config.js';
import { closeRedis, createRedis, type RedisClient } from '../../../src/infra/redis.js';
import { loadDemoData } from '../../../src/infra/seed/load-demo-data.js';
import { calendarDay, dayStamp } from '../../../src/lib/calendar/index.js';
import { shopUvKey } from '../../../src/modules/social/keys.js';
import { ensureEdgePackages, startEdge, type Edge } from '../../../kit/edge.js';
import { accepting } from '../../../kit/ports.js';
import { startRedisCluster, type TestCluster } from '../../../kit/redis-cluster.js';
import { freePort } from '../../../kit/redis-servers.js';
import { eventually } from '../../support/eventually.js';
import { buildTestApp, createTestEnv, type TestEnv } from '../../support/test-env.js';

/**
 * The edge's reads on a Redis Cluster (edge/lua/hmdp/edge/cluster.lua): a throw-away Cluster of 3
 * masters with a replica each, an app instance on it, and two edges in front: one with L1 (its
 * defaults, the push on), one reading Redis for every request (L1's life 0). The slot of a key is
 * Redis' own; shops on every master are answered as the app answers them; a slot's migration (ASK,
 * then MOVED) and a master's death (a failover) cost no wrong answer.
 */
let cluster: TestCluster;
let env: TestEnv;
let config: Config;
let redis: RedisClient;
let app: FastifyInstance;
let appUrl: string;
let withL1: Edge;
let l2Only: Edge;

beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3, replicas: 1, nodeTimeoutMs: 2_000 });
  // The app's own Redis waits end in a 503 within 3 s while a master is dead (before its failover).
  env = await createTestEnv({ REQUEST_DEADLINE_MS: '3000' });
  await loadDemoData(env.db);
  config = { ...env.config, redisClusterNodes: cluster.nodes };
  redis = createRedis(config);
  ({ app } = await buildTestApp({ ...env, config, redis }));
  appUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  const salePool = [appUrl.replace('http://', '')];
  withL1 = await startEdge(config, { salePool });
  // Its sale watcher off: that asks the slot map again every second, which would spare the reads
  // below the MOVED they count.
  l2Only = await startEdge(config, { salePool, reads: { l1TtlMs: 0, push: false, sales: false } });
  await eventually(async () => expect((await status(withL1)).push).toBe('up'));
}, 90_000);

afterAll(async () => {
  await withL1?.stop();
  await l2Only?.stop();
  await app?.close();
  if (redis) await closeRedis(redis);
  await env?.cleanup();
  await cluster?.stop();
});

interface Answer {
  status: number;
  body: string;
  /** The app answered (nginx names the upstream); else the edge did. */
  byApp: boolean;
}

async function get(base: string, path: string): Promise<Answer> {
  const response = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(15_000) });
  return { status: response.status, body: await response.text(), byApp: Boolean(response.headers.get('x-upstream')) };
}

async function status(edge: Edge): Promise<{ push: string; generation: number }> {
  return (await fetch(`${edge.url}/_edge/status`)).json() as Promise<{ push: string; generation: number }>;
}

/** The app's answer to a visitor of another address than the edge's requests' (127.0.0.1). */
async function fromApp(path: string): Promise<Answer> {
  const response = await app.inject({ url: path, remoteAddress: '10.9.9.9' });
  return { status: response.statusCode, body: response.body, byApp: true };
}

const portOf = (node: string) => Number(node.slice(node.lastIndexOf(':') + 1));
const shopSlot = (id: string) => calculateSlot(`${env.keyPrefix}cache:shop:${id}`);
const masterOf = async (id: string) => (await cluster.shardOf(shopSlot(id))).master;

/** One direct connection to a node, for CLUSTER and INFO commands. */
async function onNode<T>(port: number, use: (node: Redis) => Promise<T>): Promise<T> {
  const node = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await node.connect();
    return await use(node);
  } finally {
    node.disconnect();
  }
}

/** A node's count of error replies of a kind (INFO errorstats: MOVED, ASK). */
async function errorCount(port: number, kind: 'MOVED' | 'ASK'): Promise<number> {
  const info = await onNode(port, (node) => node.info('errorstats'));
  return Number(new RegExp(`errorstat_${kind}:count=(\\d+)`).exec(info)?.[1] ?? 0);
}

/** The edge's push subscriptions on a node (named after the key prefix: CLIENT LIST). */
async function subscribersOn(port: number): Promise<number> {
  const clients = (await onNode(port, (node) => node.call('CLIENT', 'LIST'))) as string;
  return clients.split('\n').filter((line) => line.includes(` name=hmdp-edge-push:${env.keyPrefix} `)).length;
}

/** The level of each answer of `path` in an edge's access log, in order (L1, L2; "-" for the app). */
async function levels(edge: Edge, path: string): Promise<string[]> {
  const log = await readFile(join(edge.prefix, 'logs/access.log'), 'utf8').catch(() => '');
  return log
    .split('\n')
    .filter((line) => line.includes(`"GET ${path} HTTP/1.1"`))
    .map((line) => line.slice(line.lastIndexOf(' ') + 1));
}

/** Shops of the demo data whose records are on each master: `count` per master. */
async function shopsPerMaster(count: number, skip: Set<string> = new Set()): Promise<Map<number, string[]>> {
  const byMaster = new Map<number, string[]>();
  for (let id = 1; id <= 60; id += 1) {
    if (skip.has(String(id))) continue;
    const master = await masterOf(String(id));
    const shops = byMaster.get(master) ?? [];
    if (shops.length < count) byMaster.set(master, [...shops, String(id)]);
  }
  return byMaster;
}

/**
 * The edge's Lua (hmdp.edge.crc16) run by a throw-away nginx of this test's own (not the product's
 * template): the slot of each key, keys one a line in the request's body.
 */
async function luaSlots(keys: string[]): Promise<number[]> {
  const nginx = ensureEdgePackages();
  const prefix = await mkdtemp(join(tmpdir(), 'hmdp-edge-crc16-'));
  const port = await freePort();
  const conf = `
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
pid ${prefix}/nginx.pid;
worker_processes 1;
events {}
http {
  access_log off;
  lua_package_path "${EDGE_DIR}/lua/?.lua;/usr/share/lua/5.1/?.lua;;";
  client_body_temp_path ${prefix};
  client_body_buffer_size 4m;
  client_max_body_size 4m;
  server {
    listen 127.0.0.1:${port};
    location / {
      content_by_lua_block {
        local crc16 = require "hmdp.edge.crc16"
        ngx.req.read_body()
        local slots = {}
        for key in string.gmatch(ngx.req.get_body_data(), "([^\\n]+)") do slots[#slots + 1] = crc16.slot(key) end
        ngx.print(table.concat(slots, ","))
      }
    }
  }
}
`;
  await writeFile(join(prefix, 'nginx.conf'), conf);
  const master = spawn(nginx, ['-p', prefix, '-c', join(prefix, 'nginx.conf'), '-e', join(prefix, 'error.log'), '-g', 'daemon off;'], { stdio: 'ignore' });
  const exited = new Promise((resolve) => master.once('exit', resolve));
  try {
    await eventually(async () => expect(await accepting(port)).toBe(true), 10_000);
    const response = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: keys.join('\n') });
    expect(response.status).toBe(200);
    return (await response.text()).split(',').map(Number);
  } finally {
    master.kill('SIGTERM');
    await exited;
    await rm(prefix, { recursive: true, force: true });
  }
}

describe('the edge on a Redis Cluster', () => {
  it("computes a key's slot as Redis does (CRC16 XMODEM of the key or its hash tag, mod 16384)", async () => {
    const tagged = ['{user1000}.following', 'foo{}{bar}', 'foo{{bar}}zap', 'foo{bar}{zap}', '{}', '}{', 'a{b', 'a}b{', '{a}', 'x{店铺}y', '店铺:1', 'é'];
    const random = Array.from(
      { length: 3_000 },
      (_, i) => `${env.keyPrefix}cache:shop:${i}${i % 7 === 0 ? `{tag${i % 50}}` : ''}:${Math.random().toString(36).slice(2)}`,
    );
    const keys = [...tagged, ...random];
    const lua = await luaSlots(keys);
    const byRedis = await onNode(portOf(cluster.nodes[0]!), async (node) => {
      const pipeline = node.pipeline();
      for (const key of keys) pipeline.cluster('KEYSLOT', key);
      return (await pipeline.exec())!.map(([error, slot]) => {
        if (error) throw error;
        return Number(slot);
      });
    });
    expect(lua).toEqual(byRedis);
    // ioredis' cluster-key-slot agrees wherever a key has no empty tag followed by another "{".
    const plain = keys.filter((key) => !key.includes('{}'));
    expect(plain.map((key) => lua[keys.indexOf(key)])).toEqual(plain.map((key) => calculateSlot(key)));
  });

  it('answers shops on every master from Redis, then from L1, as the app does; no MOVED once it has the map; counts the visits', async () => {
    const byMaster = await shopsPerMaster(2);
    expect(byMaster.size).toBe(3);
    const shops = [...byMaster.values()].flat();
    // The app caches each shop, and announces it: once the edge has seen every announcement, none
    // can drop what it keeps after (the generation counts them).
    const generation = (await status(withL1)).generation;
    for (const id of shops) expect((await fromApp(`/api/shop/${id}`)).status).toBe(200);
    await eventually(async () => expect((await status(withL1)).generation).toBeGreaterThanOrEqual(generation + shops.length));
    const expected = new Map<string, Answer>();
    for (const id of shops) expected.set(id, await fromApp(`/api/shop/${id}`));

    await get(l2Only.url, `/api/shop/${shops[0]!}`); // the slot map, once
    const moved = async () => (await Promise.all([...byMaster.keys()].map((port) => errorCount(port, 'MOVED')))).reduce((a, b) => a + b, 0);
    const movedBefore = await moved();
    for (const id of shops) {
      for (const edge of [withL1, l2Only, withL1]) {
        const answer = await get(edge.url, `/api/shop/${id}`);
        expect({ id, ...answer }).toEqual({ id, ...expected.get(id)!, byApp: false });
      }
    }
    // Each key went to its master at once: Redis redirected none of the edges' reads.
    expect(await moved()).toBe(movedBefore);
    await eventually(async () => {
      for (const id of shops) {
        expect(await levels(withL1, `/api/shop/${id}`)).toEqual(['L2', 'L1']);
        expect(await levels(l2Only, `/api/shop/${id}`)).toEqual(expect.arrayContaining(['L2']));
      }
    }, 5_000);
    // The edge's visits reach each shop's HyperLogLog on its own node: the app's visitor and the edge's.
    const today = dayStamp(calendarDay(Date.now()));
    await eventually(async () => {
      for (const id of shops) expect(await redis.pfcount(shopUvKey(id, today))).toBe(2);
    }, 10_000);
  });

  it("follows ASK while a shop's slot migrates, then MOVED once it has moved, and then goes to the new master at once", async () => {
    const id = [...(await shopsPerMaster(1)).values()].flat()[0]!;
    const key = `${env.keyPrefix}cache:shop:${id}`;
    const slot = shopSlot(id);
    const source = await masterOf(id);
    const masters = cluster.nodes.slice(0, 3).map(portOf);
    const target = masters.find((port) => port !== source)!;
    expect((await fromApp(`/api/shop/${id}`)).status).toBe(200);
    const expected = { ...(await fromApp(`/api/shop/${id}`)), byApp: false };
    expect(await get(l2Only.url, `/api/shop/${id}`)).toEqual(expected);

    const sourceId = (await onNode(source, (node) => node.call('CLUSTER', 'MYID'))) as string;
    const targetId = (await onNode(target, (node) => node.call('CLUSTER', 'MYID'))) as string;
    await onNode(target, (node) => node.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', sourceId));
    await onNode(source, (node) => node.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', targetId));
    await onNode(source, (node) => node.call('MIGRATE', '127.0.0.1', target, '', 0, 5_000, 'KEYS', key));
    // The record is on the target now: the source answers ASK, and the edge asks the target.
    const asks = await errorCount(source, 'ASK');
    expect(await get(l2Only.url, `/api/shop/${id}`)).toEqual(expected);
    expect(await errorCount(source, 'ASK')).toBeGreaterThan(asks);

    // The rest of the slot, then the slot itself, as redis-cli --cluster reshard does.
    await onNode(source, async (node) => {
      const rest = (await node.call('CLUSTER', 'GETKEYSINSLOT', slot, 1_000)) as string[];
      if (rest.length > 0) await node.call('MIGRATE', '127.0.0.1', target, '', 0, 5_000, 'KEYS', ...rest);
    });
    for (const port of [target, source, ...masters.filter((port) => port !== source && port !== target)]) {
      await onNode(port, (node) => node.call('CLUSTER', 'SETSLOT', slot, 'NODE', targetId));
    }
    const moves = await errorCount(source, 'MOVED');
    expect(await get(l2Only.url, `/api/shop/${id}`)).toEqual(expected);
    expect(await errorCount(source, 'MOVED')).toBeGreaterThan(moves);
    // The MOVED updated the map: the next reads go to the target without a redirection.
    await eventually(async () => {
      const before = await errorCount(source, 'MOVED');
      expect(await get(l2Only.url, `/api/shop/${id}`)).toEqual(expected);
      expect(await errorCount(source, 'MOVED')).toBe(before);
    }, 5_000);
  });

  it("a master killed: every answer during the failover and after is the app's, or given by the app; then the promoted replica answers, and the push comes back on another seed", async () => {
    const byMaster = await shopsPerMaster(2);
    const shops = [...byMaster.values()].flat();
    for (const id of shops) expect((await fromApp(`/api/shop/${id}`)).status).toBe(200);
    const expected = new Map<string, Answer>();
    for (const id of shops) expected.set(id, await fromApp(`/api/shop/${id}`));
    // The first seed, where the push subscribed (the other seeds are tried in turn when it fails).
    const victim = portOf(cluster.nodes[0]!);
    const onVictim = byMaster.get(victim) ?? [];
    expect(onVictim.length).toBeGreaterThan(0);
    expect(await subscribersOn(victim)).toBe(1);
    for (const id of shops) for (const edge of [withL1, l2Only]) expect(await get(edge.url, `/api/shop/${id}`)).toEqual({ ...expected.get(id)!, byApp: false });

    const wrong: unknown[] = [];
    const answered = { edge: 0, app: 0 };
    let reading = true;
    const readAll = async () => {
      while (reading) {
        for (const id of shops) {
          for (const edge of [withL1, l2Only]) {
            const answer = await get(edge.url, `/api/shop/${id}`).catch((error: unknown) => ({ status: 0, body: String(error), byApp: false }));
            if (answer.byApp) answered.app += 1;
            else if (answer.status === expected.get(id)!.status && answer.body === expected.get(id)!.body) answered.edge += 1;
            else wrong.push({ id, edge: edge === withL1 ? 'L1' : 'L2', ...answer });
          }
        }
      }
    };
    const readers = [readAll(), readAll()];
    try {
      cluster.process(victim).kill('SIGKILL');
      await eventually(async () => expect((await cluster.shardOf(shopSlot(onVictim[0]!))).master).not.toBe(victim), 30_000);
      await cluster.waitUntilHealthy(30_000);
      // After the failover: the victim's shops are answered by the edge again, from the promoted replica.
      await eventually(async () => {
        for (const id of onVictim) expect(await get(l2Only.url, `/api/shop/${id}`)).toEqual({ ...expected.get(id)!, byApp: false });
      }, 20_000);
      await eventually(async () => expect((await status(withL1)).push).toBe('up'), 10_000);
      const survivors = cluster.nodes.map(portOf).filter((port) => port !== victim);
      expect((await Promise.all(survivors.map(subscribersOn))).reduce((a, b) => a + b, 0)).toBe(1);
    } finally {
      reading = false;
      await Promise.all(readers);
    }
    console.log(`edge on a Cluster, a master killed: ${answered.edge} answers by the edge, ${answered.app} by the app, ${wrong.length} wrong`);
    expect(wrong).toEqual([]);
    expect(answered.edge + answered.app).toBeGreaterThan(0);
    // No Lua error anywhere (each would be logged and the request passed on).
    for (const edge of [withL1, l2Only]) expect(await edge.errorLog()).not.toContain('error, answered by the app');
  }, 90_000);
});
