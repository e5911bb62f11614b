import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDemoData } from '../../../../src/infra/seed/load-demo-data.js';
import { geoKey } from '../../../../src/modules/shops/keys.js';
import { shopCacheKey } from '../../../../src/modules/shops/keys.js';
import { SHOP_TYPE_CACHE_KEY } from '../../../../src/modules/shops/keys.js';
import { buildTestApp, createTestEnv, sessionOf, type TestEnv } from '../../../support/test-env.js';
import { metric } from './support.js';

const run = promisify(execFile);

let env: TestEnv;
let app: FastifyInstance;
let admin: { authorization: string };
let user: { authorization: string };

/** hmdp's front end sends this position (Hangzhou). */
const HERE = { x: 120.149993, y: 30.334229 };

beforeAll(async () => {
  // The null-marker path (a shop asked for before it existed is cached as missing, then created);
  // the Bloom filter, on by default, is tested in shop-cache.test.ts and http/abuse/exposure.test.ts.
  env = await createTestEnv({ SHOP_BLOOM: 'false' });
  await loadDemoData(env.db);
  admin = await sessionOf(env, '1', 'admin');
  user = await sessionOf(env, '2');
  ({ app } = await buildTestApp(env));
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

const get = (url: string) => app.inject({ url });
type Headers = Record<string, string>;
const post = (payload: Record<string, unknown>, headers: Headers = admin) => app.inject({ method: 'POST', url: '/api/shop', payload, headers });
const put = (payload: Record<string, unknown>, headers: Headers = admin) => app.inject({ method: 'PUT', url: '/api/shop', payload, headers });
const newShop = (overrides: Record<string, unknown> = {}) => ({ name: '测试店', typeId: '1', address: '台州路1号', x: 120.15, y: 30.33, ...overrides });

async function geoPosition(typeId: string, id: string): Promise<[number, number] | null> {
  const [position] = (await env.redis.geopos(geoKey(typeId), id)) as Array<[string, string] | null>;
  return position ? [Number(position[0]), Number(position[1])] : null;
}

describe('shop types', () => {
  it('lists the ten types in display order, cached under cache:type (one load for many reads)', async () => {
    const responses = await Promise.all(Array.from({ length: 20 }, () => get('/api/shop-type/list')));
    const types = responses[0]!.json().data as Array<{ id: string; name: string; icon: string; sort: number }>;
    expect(types).toHaveLength(10);
    expect(types.slice(0, 4).map((type) => type.name)).toEqual(['美食', 'KTV', '丽人·美发', '美睫·美甲']);
    expect(types[0]).toEqual({ id: '1', name: '美食', icon: '/types/ms.png', sort: 1 });
    expect(await metric(app, 'cache_requests_total{cache="shop-type",result="rebuild"}')).toBe(1);
    expect(await env.redis.pttl(SHOP_TYPE_CACHE_KEY)).toBeGreaterThan(3_000_000);
    // Low consistency need (hmdp): a change in MySQL shows after the TTL, not at once.
    await env.db.updateTable('tb_shop_type').set({ name: '好吃的' }).where('id', '=', '1').execute();
    expect((await get('/api/shop-type/list')).json().data[0].name).toBe('美食');
  });
});

describe('reading shops', () => {
  it("GET /api/shop/{id} answers the shop as hmdp's front end reads it", async () => {
    const response = await get('/api/shop/1');
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toEqual({
      id: '1',
      name: expect.stringContaining('103茶餐厅'),
      typeId: '1',
      images: '',
      area: expect.any(String),
      address: expect.any(String),
      x: expect.any(Number),
      y: expect.any(Number),
      avgPrice: expect.any(Number),
      sold: expect.any(Number),
      comments: expect.any(Number),
      score: expect.any(Number),
      openHours: '10:00-22:00',
      createTime: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      updateTime: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
  });

  it('pages shops of a type by id, 5 a page, without a position', async () => {
    const page = async (current: number) => (await get(`/api/shop/of/type?typeId=1&current=${current}`)).json().data.map((shop: { id: string }) => shop.id);
    expect(await page(1)).toEqual(['1', '2', '3', '4', '5']);
    expect(await page(2)).toEqual(['6']);
    expect(await page(3)).toEqual([]);
    expect((await get('/api/shop/of/type?typeId=1')).json().data).toHaveLength(5); // current defaults to 1
  });

  it('pages shops of a type by distance with a position, each with its distance in metres', async () => {
    const response = await get(`/api/shop/of/type?typeId=2&current=1&x=${HERE.x}&y=${HERE.y}`);
    const shops = response.json().data as Array<{ id: string; typeId: string; distance: number }>;
    expect(shops.length).toBeGreaterThan(0);
    expect(shops.length).toBeLessThanOrEqual(5);
    for (const shop of shops) {
      expect(shop.typeId).toBe('2');
      expect(shop.distance).toBeGreaterThanOrEqual(0);
      expect(shop.distance).toBeLessThanOrEqual(5000);
    }
    expect(shops.map((shop) => shop.distance)).toEqual([...shops.map((shop) => shop.distance)].sort((a, b) => a - b));
  });

  it('searches by name (literal text, 10 a page) and lists everything without a name', async () => {
    const ktv = (await get(`/api/shop/of/name?name=${encodeURIComponent('KTV')}`)).json().data as Array<{ name: string }>;
    expect(ktv.length).toBeGreaterThan(0);
    expect(ktv.every((shop) => shop.name.includes('KTV'))).toBe(true);
    expect((await get(`/api/shop/of/name?name=${encodeURIComponent('%')}`)).json().data).toEqual([]);
    expect((await get('/api/shop/of/name?current=1')).json().data).toHaveLength(10);
    expect((await get('/api/shop/of/name?current=6')).json().data).toHaveLength(10);
    expect((await get('/api/shop/of/name?current=7')).json().data).toEqual([]);
  });

  it.each([
    ['/api/shop/abc', 'params.id must be a positive integer id'],
    ['/api/shop/of/type?current=1', 'querystring.typeId is required'],
    ['/api/shop/of/type?typeId=1&current=0', 'querystring.current must be a page number from 1'],
    ['/api/shop/of/type?typeId=1&x=120.1', 'querystring.y is required with querystring.x'],
    ['/api/shop/of/type?typeId=1&y=30.1', 'querystring.x is required with querystring.y'],
    ['/api/shop/of/type?typeId=1&x=200&y=30', 'querystring.x must be a longitude'],
    ['/api/shop/of/type?typeId=1&x=abc&y=30', 'querystring.x must be a longitude'],
  ])('answers 400 naming the field for %s', async (url, message) => {
    const response = await get(url);
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ success: false, errorMsg: expect.stringContaining(message) });
  });

  it('answers 404 for an unknown shop', async () => {
    expect((await get('/api/shop/424242')).json()).toEqual({ success: false, errorMsg: 'Shop 424242 not found' });
  });
});

describe('writing shops', () => {
  it('only administrators write: 401 anonymous, 403 other users', async () => {
    expect((await post(newShop(), {})).statusCode).toBe(401);
    const refused = await post(newShop(), user);
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toEqual({ success: false, errorMsg: 'Only administrators may do this' });
    expect((await put({ id: '1', name: 'x' }, user)).statusCode).toBe(403);
  });

  it.each([
    ['a missing name', { name: undefined }, 'body.name is required'],
    ['an unknown type', { typeId: '99' }, 'body.typeId: shop type 99 does not exist'],
    ['a latitude Redis GEO cannot hold', { y: 89 }, 'body.y must be a latitude'],
    ['a bad score', { score: 51 }, 'body.score must be stars × 10'],
  ])('refuses a shop with %s (400)', async (_case, overrides, message) => {
    const response = await post(newShop(overrides));
    expect(response.statusCode).toBe(400);
    expect(response.json().errorMsg).toContain(message);
  });

  it('PUT of an unknown shop is 404; PUT needs the id', async () => {
    expect((await put({ id: '999999', name: 'x' })).json()).toEqual({ success: false, errorMsg: 'Shop 999999 not found' });
    expect((await put({ name: 'x' })).json().errorMsg).toBe('body.id is required');
  });

  it('creates a shop: readable at once, in its GEO set, found by distance', async () => {
    await get('/api/shop/61'); // someone asked for the next id before it existed: a null marker
    expect(await env.redis.get(shopCacheKey('61'))).toBe('');
    const created = await post(newShop({ name: '新店', x: 120.1501, y: 30.3343, avgPrice: 66, openHours: '09:00-21:00' }));
    expect(created.statusCode).toBe(200);
    const id = created.json().data as string;
    expect(id).toBe('61');
    expect((await get(`/api/shop/${id}`)).json().data).toMatchObject({ id, name: '新店', avgPrice: 66, openHours: '09:00-21:00', typeId: '1' });
    const position = await geoPosition('1', id);
    expect(position![0]).toBeCloseTo(120.1501, 5);
    expect(position![1]).toBeCloseTo(30.3343, 5);
    const nearest = (await get(`/api/shop/of/type?typeId=1&x=${HERE.x}&y=${HERE.y}`)).json().data[0];
    expect(nearest).toMatchObject({ id, name: '新店' });
    expect(nearest.distance).toBeLessThan(20);
  });

  it('an update is visible on the next read; moving a shop to another type moves its GEO member', async () => {
    await get('/api/shop/5'); // cached
    expect((await put({ id: '5', name: '换了类型的店', typeId: '2', x: 120.1502, y: 30.3342 })).statusCode).toBe(200);
    expect((await get('/api/shop/5')).json().data).toMatchObject({ id: '5', name: '换了类型的店', typeId: '2', x: 120.1502, y: 30.3342 });
    expect(await geoPosition('1', '5')).toBeNull();
    const position = await geoPosition('2', '5');
    expect(position![0]).toBeCloseTo(120.1502, 5);
    const ofType2 = (await get(`/api/shop/of/type?typeId=2&x=${HERE.x}&y=${HERE.y}`)).json().data;
    expect(ofType2[0]).toMatchObject({ id: '5', typeId: '2' });
    const ofType1 = (await get(`/api/shop/of/type?typeId=1&x=${HERE.x}&y=${HERE.y}&current=1`)).json().data as Array<{ id: string }>;
    expect(ofType1.map((shop) => shop.id)).not.toContain('5');
  });

  it('after a series of updates, cache and GEO sets agree with MySQL for every shop', async () => {
    const moves = [
      { id: '7', typeId: '3', x: 120.16, y: 30.28 },
      { id: '8', x: 120.151, y: 30.331 },
      { id: '7', typeId: '1' },
      { id: '12', name: '只改名字' },
      { id: '13', typeId: '4', x: 120.2, y: 30.25, avgPrice: 10 },
    ];
    for (const move of moves) {
      await get(`/api/shop/${move.id}`); // cached before each write
      expect((await put(move)).statusCode).toBe(200);
    }
    const rows = await env.db.selectFrom('tb_shop').selectAll().execute();
    const typeIds = [...new Set(rows.map((row) => row.type_id))];
    for (const typeId of typeIds) await get(`/api/shop/of/type?typeId=${typeId}&x=${HERE.x}&y=${HERE.y}`); // loads missing sets
    for (const row of rows) {
      const shop = (await get(`/api/shop/${row.id}`)).json().data;
      expect(shop).toMatchObject({ id: row.id, name: row.name, typeId: row.type_id, x: row.x, y: row.y, avgPrice: Number(row.avg_price) });
      const position = await geoPosition(row.type_id, row.id);
      expect(position, `shop ${row.id} in ${geoKey(row.type_id)}`).not.toBeNull();
      expect(position![0]).toBeCloseTo(row.x, 5);
      expect(position![1]).toBeCloseTo(row.y, 5);
      for (const other of typeIds.filter((typeId) => typeId !== row.type_id)) {
        expect(await env.redis.zscore(geoKey(other), row.id), `shop ${row.id} not in ${geoKey(other)}`).toBeNull();
      }
    }
  });
});

describe('GEO index', () => {
  it('rebuilds a missing type set from MySQL at query time (a fresh machine)', async () => {
    await env.redis.del(geoKey('3'));
    const shops = (await get(`/api/shop/of/type?typeId=3&x=${HERE.x}&y=${HERE.y}`)).json().data as Array<{ typeId: string }>;
    expect(shops.length).toBeGreaterThan(0);
    expect(shops.every((shop) => shop.typeId === '3')).toBe(true);
    const inMysql = await env.db.selectFrom('tb_shop').select('id').where('type_id', '=', '3').execute();
    expect(await env.redis.zcard(geoKey('3'))).toBe(inMysql.length);
  });

  it('npm run geo:load / shop:index rebuilds every set from tb_shop (adds missing, prunes stale) and the Bloom filter', async () => {
    await env.redis.zrem(geoKey('4'), '20');
    await env.redis.geoadd(geoKey('4'), 120.15, 30.33, '987654'); // a member whose shop does not exist
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/cli/shop-index.ts'], {
      env: { ...process.env, NODE_ENV: 'production', MYSQL_URL: env.mysqlUrl, REDIS_KEY_PREFIX: env.keyPrefix, SHOP_BLOOM_EXPECTED_ITEMS: '1000' },
    });
    expect(stdout).toMatch(/geo:load: .* 61 shops in 10 types, 1 stale members removed/);
    expect(stdout).toMatch(/bloom:rebuild: .* 61 shop ids/);
    expect(await env.redis.zscore(geoKey('4'), '987654')).toBeNull();
    expect(await env.redis.zscore(geoKey('4'), '20')).not.toBeNull();
    const rows = await env.db.selectFrom('tb_shop').select(['id', 'type_id']).execute();
    for (const row of rows) expect(await env.redis.zscore(geoKey(row.type_id), row.id)).not.toBeNull();
  });
});

describe('distance ordering', () => {
  /**
   * Hand-checked: distances from (120.149993, 30.334229) by the haversine formula with Redis'
   * earth radius 6372797.560856 m. E.g. P1 is 0.002698° due north: 0.002698 × π/180 × 6372797.56
   * = 300.1 m; P2 is 0.005007° due east at cos(30.334°) = 0.8631: 480.7 m. P6 is beyond 5 km.
   */
  const points = [
    { name: 'P4', x: 120.13, y: 30.32, distance: 2487.8 },
    { name: 'P1', x: 120.149993, y: 30.336927, distance: 300.1 },
    { name: 'P6', x: 120.1, y: 30.3, distance: 6126.6 },
    { name: 'P9', x: 120.149993, y: 30.379, distance: 4979.7 },
    { name: 'P3', x: 120.149993, y: 30.325, distance: 1026.5 },
    { name: 'P7', x: 120.1505, y: 30.3331, distance: 134.7 },
    { name: 'P5', x: 120.17, y: 30.36, distance: 3450.3 },
    { name: 'P8', x: 120.16, y: 30.34, distance: 1155.3 },
    { name: 'P2', x: 120.155, y: 30.334229, distance: 480.7 },
  ];

  beforeAll(async () => {
    await env.db.insertInto('tb_shop_type').values({ id: '50', name: '测距', sort: 50 }).execute();
    for (const point of points) expect((await post(newShop({ name: point.name, typeId: '50', x: point.x, y: point.y }))).statusCode).toBe(200);
  });

  it('pages nearest first within 5 km, 5 a page, with distances to the metre', async () => {
    const page = async (current: number) =>
      (await get(`/api/shop/of/type?typeId=50&current=${current}&x=${HERE.x}&y=${HERE.y}`)).json().data as Array<{ name: string; distance: number }>;
    const first = await page(1);
    const second = await page(2);
    expect(first.map((shop) => shop.name)).toEqual(['P7', 'P1', 'P2', 'P3', 'P8']);
    expect(second.map((shop) => shop.name)).toEqual(['P4', 'P5', 'P9']);
    expect(await page(3)).toEqual([]);
    for (const shop of [...first, ...second]) {
      const expected = points.find((point) => point.name === shop.name)!.distance;
      expect(Math.abs(shop.distance - expected), `${shop.name}: ${shop.distance} m`).toBeLessThan(1);
    }
  });
});
