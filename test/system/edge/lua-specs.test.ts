import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_READS, EDGE_DIR, edgeSettings } from '../../../src/cli/edge-render.js';
import { loadConfig } from '../../../src/infra/config.js';
import { SaleKeys } from '../../../src/modules/seckill/index.js';
import { ensureEdgePackages } from '../../../kit/edge.js';
import { accepting } from '../../../kit/ports.js';
import { freePort } from '../../../kit/redis-servers.js';

/**
 * The edge's pure Lua modules, one by one, in a real nginx (edge/spec/runner.lua: a spec module's
 * input and result as JSON), against the TypeScript they mirror: the sale's key names against
 * SaleKeys, reserve.lua's refusals at every boundary of the clock's bounds, a voucher list's stock
 * merged into the app's own bytes.
 */
const KEY_PREFIX = 'spec:prefix:';
const config = loadConfig({ NODE_ENV: 'test', REDIS_KEY_PREFIX: KEY_PREFIX, SECKILL_STREAM_SHARDS: '5' });
let dir: string;
let master: ChildProcess;
let url: string;

beforeAll(async () => {
  const nginx = ensureEdgePackages();
  dir = await mkdtemp(join(tmpdir(), 'hmdp-edge-spec-'));
  await mkdir(join(dir, 'logs'));
  const port = await freePort();
  await writeFile(join(dir, 'edge-settings.json'), JSON.stringify(await edgeSettings(config, DEFAULT_READS)));
  await writeFile(
    join(dir, 'nginx.conf'),
    `worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/logs/error.log warn;
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  lua_package_path "${EDGE_DIR}/lua/?.lua;${EDGE_DIR}/spec/?.lua;/usr/share/lua/5.1/?.lua;;";
  lua_shared_dict hmdp_edge_l1 1m;
  lua_shared_dict hmdp_edge_marks 1m;
  init_by_lua_block { require("hmdp.edge.settings").load("${dir}/edge-settings.json") }
  server {
    listen 127.0.0.1:${port};
    client_body_buffer_size 1m;
    location ~ ^/spec/(\\w+)$ { content_by_lua_block { require("runner").run(ngx.var[1]) } }
  }
}
`,
  );
  master = spawn(nginx, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'logs/error.log'), '-g', 'daemon off;'], { stdio: 'ignore' });
  for (let waited = 0; !(await accepting(port)); waited += 50) {
    if (master.exitCode !== null || waited > 10_000) throw new Error('the spec nginx did not start');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  url = `http://127.0.0.1:${port}`;
}, 60_000);

afterAll(async () => {
  if (master && master.exitCode === null) {
    const exited = new Promise((resolve) => master.once('exit', resolve));
    master.kill('SIGTERM');
    await exited;
  }
  await rm(dir, { recursive: true, force: true });
});

async function spec<T>(name: string, input: unknown): Promise<T> {
  const answer = (await (await fetch(`${url}/spec/${name}`, { method: 'POST', body: JSON.stringify(input) })).json()) as { result?: T; error?: string };
  if (answer.error !== undefined) throw new Error(`${name}: ${answer.error}`);
  return answer.result!;
}

describe("the edge's Lua, module by module", () => {
  it("names a sale's keys as SaleKeys does, for ids of every length and every bucket layout", async () => {
    const keys = new SaleKeys(5, true);
    const ids = ['1', '9', '10', '12345', '9007199254740993', '9223372036854775807', '1000000000000000000'];
    for (let i = 0; i < 40; i += 1) ids.push(String(1 + Math.floor(Math.random() * 1e15)) + String(i));
    const cases = ids.flatMap((id) => [2, 3, 5, 8].map((of) => ({ id, of, bucket: ids.indexOf(id) % of })));
    const result = await spec<Array<Record<string, string | false>>>('sale_keys', cases);
    cases.forEach((c, i) => {
      expect(result[i]).toEqual({
        voucher: KEY_PREFIX + keys.voucher(c.id).voucher,
        bucket: KEY_PREFIX + keys.bucket(c.id, { index: c.bucket, of: c.of }).voucher,
        fromVoucher: c.id,
        fromBucket: c.id,
      });
    });
    expect(result.at(-1)).toEqual({ other: false });
  });

  it("refuses as reserve.lua decides, only where the clock's bounds leave no doubt, and across buckets only when all agree", async () => {
    const open = { stock: 5, begin: 1_000, finish: 2_000 };
    const cases: Array<[parts: object[], low: number, high: number, expected: string | false]> = [
      [[open], 500, 999, 'not-started'],
      [[open], 999, 1_000, false], // may have started
      [[open], 2_000, 2_100, 'ended'],
      [[open], 1_999, 2_000, false], // may have ended
      [[open], 1_500, 1_510, false], // open, stock left
      [[{ ...open, stock: 0 }], 1_500, 1_510, 'sold-out'],
      [[{ ...open, stock: 0, pending: 1 }], 1_500, 1_510, false], // a unit on its way between buckets
      [[{ ...open, stock: -1 }], 1_500, 1_510, 'sold-out'],
      [[{ ...open, suspended: true }], 1_500, 1_510, 'suspended'],
      [[{ ...open, suspended: true, stock: 0 }], 1_500, 1_510, 'suspended'], // paused before sold out, as reserve.lua checks
      [[{ ...open, stock: 0, frozen_until: 1_600 }], 1_500, 1_510, false], // frozen: the app answers
      [[{ ...open, stock: 0, frozen_until: 1_505 }], 1_500, 1_510, false], // may be frozen
      [[{ ...open, stock: 0, frozen_until: 1_500 }], 1_500, 1_510, 'sold-out'],
      [[{ ...open, begin: 3_000, finish: 2_000 }], 2_500, 2_600, 'not-started'],
      [
        [
          { ...open, stock: 0 },
          { ...open, stock: 0 },
          { ...open, stock: 0 },
        ],
        1_500,
        1_510,
        'sold-out',
      ],
      [
        [
          { ...open, stock: 0 },
          { ...open, stock: 1 },
          { ...open, stock: 0 },
        ],
        1_500,
        1_510,
        false,
      ],
      [
        [
          { ...open, stock: 0 },
          { ...open, stock: 0, suspended: true },
        ],
        1_500,
        1_510,
        false,
      ],
      [[open, { ...open, begin: 1_200 }], 1_100, 1_150, false], // one bucket open, one not started
    ];
    const result = await spec<Array<string | false>>(
      'sale_rules',
      cases.map(([parts, low, high]) => ({ parts, low, high })),
    );
    expect(result).toEqual(cases.map((c) => c[3]));
  });

  it("puts each sale's live stock into a voucher list's bytes, fooled by no text inside its strings", async () => {
    const voucher = (id: string, title: string, stock?: number) => ({
      id,
      shopId: '1',
      title,
      subTitle: '',
      rules: 'no "stock":1 here, nor {"id":"3",',
      payValue: 100,
      actualValue: 200,
      type: stock === undefined ? 0 : 1,
      status: 1,
      ...(stock === undefined
        ? {}
        : { stock, beginTime: '2026-11-28T00:00:00.000Z', endTime: '2026-11-29T00:00:00.000Z', limitPerUser: 1, purchaseGate: 'off' }),
    });
    const list = [voucher('1', 'plain {"id":"2","stock":5}'), voucher('2', '"stock":9 秒杀', 10), voucher('3', 'buckets', 10), voucher('4', 'not in Redis', 8)];
    const json = JSON.stringify(list);
    const bucketed = { buckets: [{ stock: 2, pending: 1 }, { stock: 0 }, { stock: 4 }] };
    const merged = await spec<string | false>('voucher_stock', { json, sales: { '2': { stock: 6 }, '3': bucketed, '4': 'absent' } });
    const expected = JSON.stringify(list.map((v) => (v.id === '2' ? { ...v, stock: 6 } : v.id === '3' ? { ...v, stock: 7 } : v)));
    expect(merged).toBe(expected);
    // A sale of the list without a view: the app answers.
    expect(await spec('voucher_stock', { json, sales: { '2': { stock: 6 } } })).toBe(false);
  });
  it('counts a header given once (in any case), twice, or not at all, as the app would see it', async () => {
    // node:http sends an array as one header line per value; fetch would join them.
    const counted = await new Promise<string>((resolve, reject) => {
      const sent = request(`${url}/spec/header_count`, {
        method: 'POST',
        headers: { 'x-request-id': ['a', 'b'], 'Accept-Language': 'en', 'content-type': 'application/json' },
      });
      sent.on('error', reject);
      sent.on('response', (response) => {
        let body = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve(body));
      });
      sent.end(JSON.stringify(['x-request-id', 'accept-language', 'origin']));
    });
    expect(JSON.parse(counted)).toEqual({
      result: {
        'x-request-id': { count: 2, repeated: true },
        'accept-language': { count: 1, repeated: false },
        origin: { count: 0, repeated: false },
      },
    });
  });
});
