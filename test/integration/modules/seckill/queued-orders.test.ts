import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSeckill } from '../../../../src/modules/seckill/index.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';
import { buy, insertSeckillVoucher, mysqlOrders } from '../../../support/seckill.js';

let env: TestEnv;
let app: FastifyInstance;
let users: Array<{ id: string; token: string }>;
/** The order worker, run by hand: until it runs, accepted orders stay queued in Redis. */
let seckill: ReturnType<typeof buildSeckill>;

beforeAll(async () => {
  env = await createTestEnv({ SECKILL_STRATEGY: 'async', SECKILL_STREAM_SHARDS: '3' });
  users = await createUsersWithSessions(env, 3, 15_720_000_000);
  ({ app } = await buildTestApp(env));
  seckill = buildSeckill({ config: env.config, redis: env.redis, db: env.db, consumerName: 'queued-test', log: pino({ level: 'silent' }) });
});

afterAll(async () => {
  await app?.close();
  await seckill?.close();
  await env?.cleanup();
});

const get = (token: string, url: string) => app.inject({ url, headers: { authorization: token } });
/**
 * Order ids newest first, the order the user's list guarantees: ids rise with the time of acceptance
 * (decimal strings of 64-bit ints, compared as BigInt). Not creation times: MySQL keeps those to the second.
 */
const newestIdFirst = (ids: string[]): string[] => [...ids].sort((a, b) => (BigInt(a) < BigInt(b) ? 1 : BigInt(a) > BigInt(b) ? -1 : 0));

async function drainAll(): Promise<void> {
  for (let round = 0; round < 50 && (await seckill.sale.reads.queuedOfUser(users[0]!.id)).length > 0; round += 1) await seckill.worker.drainOnce();
}

describe('orders accepted and not yet written (queued) are visible at once', () => {
  it('in GET /voucher-order/of/me (first, with their voucher) and GET /voucher-order/{id}, then from MySQL once written, never twice', async () => {
    const [alice, bob] = users as [(typeof users)[0], (typeof users)[0]];
    // Vouchers on all three shards, plus an older order of Alice's already in MySQL.
    const vouchers = [await insertSeckillVoucher(env, { stock: 5, title: 'a' }), await insertSeckillVoucher(env, { stock: 5, title: 'b' })];
    const older = (await buy(app, alice.token, vouchers[0]!)).json().data as string;
    await drainAll();
    expect(await mysqlOrders(env, vouchers[0]!)).toHaveLength(1);

    const more = [await insertSeckillVoucher(env, { stock: 5, title: 'c' }), await insertSeckillVoucher(env, { stock: 5, title: 'd' })];
    expect(new Set([...vouchers, ...more].map((id) => seckill.keys.shardOf(id))).size).toBe(3);
    const queuedIds: string[] = [];
    const firstQueued = (): string => queuedIds[0]!;
    for (const voucherId of [vouchers[1]!, ...more]) queuedIds.push((await buy(app, alice.token, voucherId)).json().data as string);
    await buy(app, bob.token, more[0]!); // someone else's order is not Alice's

    const page = (await get(alice.token, '/api/voucher-order/of/me')).json();
    expect(page.total).toBe(4);
    // Newest id first; the older order (already in MySQL, the smallest id) last.
    expect(page.data.map((item: { id: string }) => item.id)).toEqual(newestIdFirst([...queuedIds, older]));
    expect(page.data.find((item: { id: string }) => item.id === queuedIds[2])).toMatchObject({
      voucherId: more[1],
      state: 'queued',
      title: 'd',
      payValue: 100,
    });
    expect(page.data[3]).toMatchObject({ id: older, state: 'created' });
    for (const id of queuedIds) expect((await get(alice.token, `/api/voucher-order/${id}`)).json().data).toMatchObject({ id, state: 'queued' });
    expect((await get(bob.token, `/api/voucher-order/${firstQueued()}`)).statusCode).toBe(404);
    expect((await get(alice.token, `/api/voucher-order/of/me/voucher/${more[0]!}`)).json().data).toMatchObject({ id: queuedIds[1], state: 'queued' });

    await drainAll();
    const written = (await get(alice.token, '/api/voucher-order/of/me')).json();
    expect(written.total).toBe(4);
    // The same order once written, though the worker wrote them shard by shard, not in order of acceptance.
    expect(written.data.map((item: { id: string; state: string }) => [item.id, item.state])).toEqual(
      newestIdFirst([...queuedIds, older]).map((id) => [id, 'created']),
    );
    // Written orders leave the shards' queued-by-user sets with their queued entries.
    for (const shard of seckill.keys.allShards()) expect(await env.redis.zcard(seckill.keys.shard(shard).queuedByUser)).toBe(0);
    expect((await get(alice.token, `/api/voucher-order/${firstQueued()}`)).json().data).toMatchObject({ state: 'created' });
  });

  it('an order given back (released) leaves the queued list', async () => {
    const carol = users[2]!;
    const voucherId = await insertSeckillVoucher(env, { stock: 5 });
    const orderId = (await buy(app, carol.token, voucherId)).json().data as string;
    expect((await seckill.sale.reads.queuedOfUser(carol.id)).map((order) => order.orderId)).toEqual([orderId]);
    await seckill.sale.settlement.release({ orderId, userId: carol.id, voucherId, slot: 1 });
    expect(await seckill.sale.reads.queuedOfUser(carol.id)).toEqual([]);
    expect((await get(carol.token, `/api/voucher-order/${orderId}`)).statusCode).toBe(404);
  });
});
