import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSeckill } from '../../../../src/modules/seckill/index.js';
import type { RouteEntry } from '../../../../src/http/route-table.js';
import { SessionStore } from '../../../../src/modules/users/session-store.js';
import { eventually } from '../../../support/eventually.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, grantAdmin, type TestEnv } from '../../../support/test-env.js';
import { multipartFile } from '../../../support/multipart.js';
import { snapshotWorld, type WorldSnapshot } from '../../../support/world-snapshot.js';
import { ABSENT_ID, forgedAuthorizations, hostileRequests, NORMAL_USER, routeKey, type Context, type HostileRequest } from './hostile-requests.js';

/**
 * Every /api route of the real app (on real Redis and MariaDB) gets the hostile requests that
 * hostile-requests.ts derives from its schema, plus other users' ids. Each must be answered
 * below 500 (exactly 400 / 401 / 403 / 413 / 415 where the input says so) in the
 * `{success: false, errorMsg}` wrapper, and afterwards the database, Redis and the uploaded
 * files are what they were before.
 */

/**
 * Keys any request may change, left out of the comparison: unique visitors (every successful
 * GET), rate-limit counters (every request counts), id counters (a refused seckill order has
 * already taken its id), cache entries and rebuild-lock fences (a read of an unknown shop stores
 * a null marker). Sessions stay in: their values must not change (their TTL, renewed by each
 * request, is not compared).
 */
const CHANGES_ON_ANY_REQUEST = /^(uv:|rl:|icr:|cache:|lock:)|rate-?limit/;

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
const UPLOAD_MAX_BYTES = 64 * 1024;

type User = { id: string; token: string; phone: string };

let env: TestEnv;
let app: FastifyInstance;
let admin: User;
let alice: User;
let bob: User;
/** Only the target of the routes that act whatever their input (sign-in, logout, codes). */
let carol: User;
/** Alice's things, which Bob must not see or touch. */
let owned: { shopId: string; voucherId: string; orderId: string; blogId: string; upload: string };
let before: WorldSnapshot;
let apiRoutes: RouteEntry[];

const as = (user: { token: string }) => ({ authorization: user.token });

async function call(options: InjectOptions) {
  const response = await app.inject(options);
  expect(response.statusCode, `${options.method ?? 'GET'} ${JSON.stringify(options.url)}: ${response.body}`).toBeLessThan(300);
  return response.json<{ success: boolean; data?: unknown }>();
}

beforeAll(async () => {
  env = await createTestEnv({ UPLOAD_MAX_BYTES: String(UPLOAD_MAX_BYTES) });
  const first = 15_900_000_000;
  const users = (await createUsersWithSessions(env, 4, first)).map((user, i) => ({ ...user, phone: String(first + i) }));
  [admin, alice, bob, carol] = users as [User, User, User, User];
  await grantAdmin(env, admin!.phone); // reaches the session created above
  ({ app } = await buildTestApp(env));
  apiRoutes = app.routeTable.filter((route) => route.url.startsWith('/api/'));

  // Alice's world: a shop (by the admin), a seckill order written to MySQL, a blog Bob's feed
  // got, a like, an uploaded image, a sign-in.
  await env.db.insertInto('tb_shop_type').values({ name: 'food' }).execute();
  const typeId = (await env.db.selectFrom('tb_shop_type').select('id').executeTakeFirstOrThrow()).id;
  const shopId = (
    await call({ method: 'POST', url: '/api/shop', headers: as(admin), payload: { name: 'Noodles', typeId, address: 'West Lake 1', x: 120.15, y: 30.28 } })
  ).data as string;
  const hour = 3_600_000;
  const voucherId = (
    await call({
      method: 'POST',
      url: '/api/voucher/seckill',
      headers: as(admin),
      payload: {
        shopId,
        title: '50 off',
        payValue: 100,
        actualValue: 200,
        stock: 10,
        beginTime: new Date(Date.now() - hour).toISOString(),
        endTime: new Date(Date.now() + hour).toISOString(),
      },
    })
  ).data as string;
  const orderId = (await call({ method: 'POST', url: `/api/voucher-order/seckill/${voucherId}`, headers: as(alice) })).data as string;
  const { worker } = buildSeckill({ config: env.config, redis: env.redis, db: env.db, log: app.log });
  worker.start();
  try {
    await eventually(async () => expect((await call({ url: `/api/voucher-order/${orderId}`, headers: as(alice) })).data).toMatchObject({ state: 'created' }));
  } finally {
    await worker.stop();
  }
  await call({ method: 'PUT', url: `/api/follow/${alice.id}/true`, headers: as(bob) });
  const blogId = (await call({ method: 'POST', url: '/api/blog', headers: as(alice), payload: { shopId, title: 'Great noodles', content: 'Really.' } }))
    .data as string;
  await call({ method: 'PUT', url: `/api/blog/like/${blogId}`, headers: as(bob) });
  const image = multipartFile(PNG);
  const upload = (await call({ method: 'POST', url: '/api/upload/blog', headers: { ...as(alice), ...image.headers }, payload: image.payload })).data as string;
  await call({ method: 'POST', url: '/api/user/sign', headers: as(alice) });
  owned = { shopId, voucherId, orderId, blogId, upload };
  // Sets built on first read (follows:{id}) exist before the snapshot.
  for (const user of [admin, alice, bob, carol]) await call({ url: `/api/follow/or/not/${alice.id === user.id ? bob.id : alice.id}`, headers: as(user) });

  before = await snapshotWorld(env, CHANGES_ON_ANY_REQUEST);
  expect(before.files).toHaveLength(1);
}, 60_000);

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

/** A session Alice had and logged out of. */
async function deletedToken(): Promise<string> {
  const token = await new SessionStore(env.redis, env.config.auth.sessionTtlSeconds).create({ id: alice.id, nickName: 'alice', icon: '', role: 'user' });
  await call({ method: 'POST', url: '/api/user/logout', headers: { authorization: token } });
  return token;
}

async function forEachConcurrently<T>(items: readonly T[], concurrency: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) await run(items[next++]!);
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
}

/** What is wrong with an answer, or null. */
function judge(request: Pick<HostileRequest, 'status' | 'orNotFound'>, response: { statusCode: number; body: string }): string | null {
  const { statusCode: status, body } = response;
  if (status >= 500) return `answered ${status}`;
  let json: { success?: unknown; errorMsg?: unknown };
  try {
    json = JSON.parse(body) as typeof json;
  } catch {
    return `answered ${status} with a body that is not JSON: ${body.slice(0, 80)}`;
  }
  if (request.status !== null && status !== request.status && !(request.orNotFound && (status === 404 || status === 414)))
    return `answered ${status}, expected ${request.status}`;
  if (status >= 400) {
    if (json.success !== false || typeof json.errorMsg !== 'string' || json.errorMsg.length === 0)
      return `answered ${status} outside the {success:false, errorMsg} wrapper`;
  } else if (status >= 300 || typeof json.success !== 'boolean') {
    return `answered ${status} outside the wrapper`;
  }
  return null;
}

const changesOf = (after: WorldSnapshot): string[] => {
  const changed: string[] = [];
  for (const part of ['tables', 'redis'] as const) {
    const keys = new Set([...Object.keys(before[part]), ...Object.keys(after[part])]);
    for (const key of keys) if (before[part][key] !== after[part][key]) changed.push(`${part === 'tables' ? 'table' : 'key'} ${key}`);
  }
  if (JSON.stringify(before.files) !== JSON.stringify(after.files)) changed.push('uploaded files');
  return changed;
};

describe('hostile input at every route', () => {
  it('answers every hostile request below 500, with the status the input calls for, in the wrapper', async () => {
    const context: Context = {
      admin: as(admin),
      bystander: as(carol),
      normalUser: as(bob),
      forged: forgedAuthorizations(await deletedToken(), alice.id, createHash('sha256').update(alice.token).digest('hex')),
      bodyLimit: app.initialConfig.bodyLimit ?? 1_048_576,
      uploadMaxBytes: UPLOAD_MAX_BYTES,
    };
    const requests = apiRoutes.flatMap((route) => hostileRequests(route, context));
    // Other methods on each path: no such route.
    for (const url of new Set(apiRoutes.map((route) => route.url))) {
      for (const method of ['DELETE', 'PATCH'] as const) {
        if (!apiRoutes.some((route) => route.url === url && route.method === method)) {
          requests.push({
            name: `${method} on ${url}`,
            route: apiRoutes.find((route) => route.url === url)!,
            method,
            url: url.replace(/:\w+/g, ABSENT_ID),
            headers: as(admin),
            status: 404,
          });
        }
      }
    }
    expect(requests.length).toBeGreaterThan(2000);

    const failures: string[] = [];
    let rateLimited = 0;
    // A few at a time: they change nothing, and waits on MySQL and Redis overlap.
    await forEachConcurrently(requests, 6, async (request) => {
      const response = await app.inject({
        method: request.method as 'GET',
        url: request.url,
        headers: request.headers,
        ...(request.payload !== undefined ? { payload: request.payload } : {}),
      });
      // A rate limit refuses before validation: fine (in the wrapper), but see the count below.
      if (response.statusCode === 429) rateLimited += 1;
      const problem = judge(response.statusCode === 429 ? { status: null } : request, response);
      if (problem) failures.push(`${routeKey(request.route)} ${request.name}: ${problem}: ${response.body.slice(0, 160)}`);
      if (request.name === NORMAL_USER && response.statusCode === 403) {
        failures.push(
          `${routeKey(request.route)} refuses a normal user with 403 but its schema is not marked ADMIN_ONLY (src/http/openapi.ts), so the docs do not say so`,
        );
      }
      // A write that was accepted must have changed nothing (e.g. unfollowing someone one does not follow).
      if (response.statusCode < 300 && request.method !== 'GET') {
        const changed = changesOf(await snapshotWorld(env, CHANGES_ON_ANY_REQUEST));
        if (changed.length > 0) failures.push(`${routeKey(request.route)} ${request.name}: answered ${response.statusCode} and changed ${changed.join(', ')}`);
      }
    });
    expect(failures).toEqual([]);
    // A rate limit answers before validation; if it answered many of these, raise the limits of
    // this env so the cases test what they mean to.
    expect(rateLimited, 'requests refused with 429').toBeLessThan(requests.length / 50);
  }, 120_000);

  it('bounds every number a request can carry (Infinity is only refused by a bound: see ajvOptions)', () => {
    const unbounded: string[] = [];
    const visit = (schema: unknown, where: string): void => {
      if (schema === null || typeof schema !== 'object') return;
      const node = schema as Record<string, unknown>;
      // A constant (`type: 1`) admits its one value: it is its own bound.
      const bounded = node.const !== undefined || (node.minimum !== undefined && node.maximum !== undefined);
      if ((node.type === 'number' || node.type === 'integer') && !bounded) unbounded.push(where);
      for (const [key, child] of Object.entries(node)) visit(child, `${where}.${key}`);
    };
    // The request's parts only: a response schema documents an answer and validates nothing.
    const inputs = ['body', 'querystring', 'params', 'headers'] as const;
    for (const route of apiRoutes) for (const part of inputs) visit(route.schema?.[part], `${routeKey(route)}.${part}`);
    expect(unbounded).toEqual([]);
  });

  it("does not let a user see or act on another user's orders, images or follows", async () => {
    const checks: Array<[string, InjectOptions, number]> = [
      ["Bob reads Alice's order", { url: `/api/voucher-order/${owned.orderId}`, headers: as(bob) }, 404],
      ["Bob pays Alice's order", { method: 'POST', url: `/api/voucher-order/${owned.orderId}/pay`, headers: as(bob) }, 404],
      ["Bob deletes Alice's image", { url: `/api/upload/blog/delete?name=${encodeURIComponent(owned.upload)}`, headers: as(bob) }, 403],
      ['Bob follows himself', { method: 'PUT', url: `/api/follow/${bob.id}/true`, headers: as(bob) }, 400],
      [
        "Bob creates a voucher for Alice's shop",
        { method: 'POST', url: '/api/voucher', headers: as(bob), payload: { shopId: owned.shopId, title: 't', payValue: 1, actualValue: 2 } },
        403,
      ],
      ['Bob renames the shop', { method: 'PUT', url: '/api/shop', headers: as(bob), payload: { id: owned.shopId, name: 'Mine now' } }, 403],
    ];
    const failures: string[] = [];
    for (const [name, options, status] of checks) {
      const response = await app.inject(options);
      const problem = judge({ status }, response);
      if (problem) failures.push(`${name}: ${problem}: ${response.body.slice(0, 160)}`);
      if (response.body.includes('"state"')) failures.push(`${name}: the answer shows an order`);
    }
    expect(failures).toEqual([]);
  });

  it("reveals nothing private when any read is pointed at another user's ids", async () => {
    const aliceIds = { user: alice.id, order: owned.orderId, blog: owned.blogId, voucher: owned.voucherId, shop: owned.shopId };
    const failures: string[] = [];
    let reads = 0;
    for (const route of apiRoutes.filter((entry) => entry.method === 'GET')) {
      const schema = route.schema as { params?: { properties: object }; querystring?: { properties: Record<string, { pattern?: string }> } } | undefined;
      const idFields = [
        ...Object.keys(schema?.params?.properties ?? {}).map((field) => ['params', field] as const),
        ...Object.entries(schema?.querystring?.properties ?? {})
          .filter(([, property]) => property.pattern?.startsWith('^[1-9]'))
          .map(([field]) => ['query', field] as const),
      ];
      for (const [part, field] of idFields) {
        for (const [kind, id] of Object.entries(aliceIds)) {
          const url = part === 'params' ? route.url.replace(`:${field}`, id).replace(/:\w+/g, ABSENT_ID) : `${route.url}?${field}=${id}`;
          const response = await app.inject({ url, headers: as(bob) });
          reads += 1;
          const problem = judge({ status: null }, response);
          if (problem) failures.push(`${route.url} with Alice's ${kind} id: ${problem}`);
          for (const secret of [alice.phone, alice.token, owned.upload]) {
            if (response.body.includes(secret)) failures.push(`${route.url} with Alice's ${kind} id shows ${secret}`);
          }
          if (route.url === '/api/voucher-order/:id' && response.statusCode !== 404)
            failures.push(`${route.url} shows Alice's order to Bob (${response.statusCode})`);
        }
      }
    }
    expect(reads).toBeGreaterThan(20);
    expect(failures).toEqual([]);
  });

  it('changed nothing: same tables, same Redis data, same files, and the server still serves its users', async () => {
    expect(changesOf(await snapshotWorld(env, CHANGES_ON_ANY_REQUEST))).toEqual([]);
    expect(existsSync(join(env.config.upload.dir, owned.upload))).toBe(true);
    expect((await app.inject({ url: '/api/health' })).statusCode).toBe(200);
    expect((await call({ url: `/api/voucher-order/${owned.orderId}`, headers: as(alice) })).data).toMatchObject({ state: 'created' });
    expect((await call({ url: '/api/user/me', headers: as(bob) })).data).toMatchObject({ id: bob.id });
  });
});
