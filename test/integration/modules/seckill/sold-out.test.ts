import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { createMetrics, type Metrics } from '../../../../src/infra/metrics.js';
import { buildSeckill } from '../../../../src/modules/seckill/index.js';
import { REFUSALS } from '../../../../src/modules/seckill/messages.js';
import { buildSale, type Sale } from '../../../../src/modules/seckill/sale/sale.js';
import { SaleKeys } from '../../../../src/modules/seckill/keys.js';
import { NearCache } from '../../../../src/lib/near-cache/index.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, sessionOf, type TestEnv } from '../../../support/test-env.js';
import { buy, insertSeckillVoucher, soldOutMemoryOf } from '../../../support/seckill.js';
import { eventually } from '../../../support/eventually.js';

let env: TestEnv;
let instances: FastifyInstance[];
let metrics: Metrics[];
let users: Array<{ id: string; token: string }>;
let sale: Sale;
let nextUser = 0;

beforeAll(async () => {
  env = await createTestEnv({ SECKILL_STRATEGY: 'async', SECKILL_WORKER: 'true' });
  users = await createUsersWithSessions(env, 200);
  metrics = [createMetrics(), createMetrics()];
  instances = [];
  for (const [index, consumerName] of ['sold-out-a', 'sold-out-b'].entries()) {
    instances.push((await buildTestApp(env, undefined, { consumerName, metrics: metrics[index] })).app);
  }
  sale = buildSale(env.redis, new SaleKeys(env.config.seckill.streamShards));
});

afterAll(async () => {
  for (const app of instances ?? []) await app.close();
  await env?.cleanup();
});

const newBuyer = () => users[nextUser++]!.token;
/** How soon an instance sells again after units come back: Redis pushes the change at once; the bound leaves a busy machine room. */
const CLEARED_WITHIN_MS = 3_000;
const knownRefusals = async (index: number) =>
  (await metrics[index]!.seckillRequests.get()).values.find((value) => value.labels.outcome === 'sold-out-known')?.value ?? 0;

/** The commands the app sends on the shared client while `run` runs (a spy: the real Redis answers). */
async function commandsDuring(run: () => Promise<void>): Promise<string[]> {
  const redis = env.redis as unknown as { sendCommand: (command: { name: string; args: unknown[] }) => unknown };
  const original = redis.sendCommand.bind(redis);
  const names: string[] = [];
  redis.sendCommand = (command) => {
    names.push(`${command.name} ${JSON.stringify(command.args)}`);
    return original(command);
  };
  try {
    await run();
  } finally {
    redis.sendCommand = original;
  }
  return names;
}

/**
 * The instances' background jobs, which run whatever the requests do: the worker's reads and
 * claims, its hand-off of stale sync orders, and the release queue's claims.
 */
const backgroundJob = (command: string): boolean =>
  /^(xreadgroup|xpending|xautoclaim|xclaim) /.test(command) ||
  command.includes(':unpaid-due"') ||
  (command.includes(':in-flight"') && !command.includes(':voucher:'));

/** Sells the voucher out and waits until instance `index` answers its refusals from memory. */
async function soldOutKnownOn(index: number, voucherId: string) {
  const before = await knownRefusals(index);
  await eventually(async () => {
    expect((await buy(instances[index]!, newBuyer(), voucherId)).json().errorMsg).toBe(REFUSALS.soldOut);
    expect(await knownRefusals(index)).toBeGreaterThan(before);
  }, 5_000);
}

describe('sold-out flag', () => {
  it('refuses from memory, with no order id, rate limit, reserve or read of the sale; cleared when units come back', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 2 });
    const first = (await buy(instances[0]!, newBuyer(), voucherId)).json().data as string;
    await buy(instances[1]!, newBuyer(), voucherId);
    await soldOutKnownOn(0, voucherId);
    await soldOutKnownOn(1, voucherId);

    const before = await knownRefusals(0);
    const commands = await commandsDuring(async () => {
      for (let i = 0; i < 20; i += 1) expect((await buy(instances[0]!, newBuyer(), voucherId)).json().errorMsg).toBe(REFUSALS.soldOut);
      await env.redis.exists('sold-out-test-probe'); // proves the capture sees this connection's commands
    });
    expect(await knownRefusals(0)).toBe(before + 20);
    // No reserve, rate limit or id block, no read of the sale: at most the session lookup of each
    // request (the near cache reads sessions on a connection of its own).
    const probe = (command: string) => command.startsWith('exists ') && command.includes('sold-out-test-probe');
    expect(commands.filter(probe)).toHaveLength(1);
    expect(commands.filter((command) => !command.includes(':login:token:') && !backgroundJob(command) && !probe(command))).toEqual([]);

    // Units back by an administrator (on the other instance): instance A sells again once Redis'
    // invalidation of the sale hash reaches it (sold-out-raise.test.ts holds it to the next burst).
    const admin = await sessionOf(env, '999002', 'admin');
    await instances[1]!.inject({ method: 'PATCH', url: `/api/voucher/seckill/${voucherId}`, headers: admin, payload: { stock: 3 } });
    const raisedAt = Date.now();
    await eventually(async () => expect((await buy(instances[0]!, newBuyer(), voucherId)).json().success).toBe(true), CLEARED_WITHIN_MS);
    expect(Date.now() - raisedAt).toBeLessThan(CLEARED_WITHIN_MS);

    // Sold out again, then an unpaid order's unit released (as the canceller does): cleared again.
    await soldOutKnownOn(0, voucherId);
    await sale.settlement.release({ orderId: first, userId: users[0]!.id, voucherId, slot: 1 });
    const releasedAt = Date.now();
    await eventually(async () => expect((await buy(instances[0]!, newBuyer(), voucherId)).json().success).toBe(true), CLEARED_WITHIN_MS);
    expect(Date.now() - releasedAt).toBeLessThan(CLEARED_WITHIN_MS);
  });

  it('the instance that raises the stock or resumes the sale sells again at once, without waiting for the invalidation', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 1 });
    const admin = await sessionOf(env, '999003', 'admin');
    const patch = (payload: object) => instances[0]!.inject({ method: 'PATCH', url: `/api/voucher/seckill/${voucherId}`, headers: admin, payload });
    const control = (action: string) => instances[0]!.inject({ method: 'POST', url: `/api/voucher/seckill/${voucherId}/${action}`, headers: admin });
    expect((await buy(instances[0]!, newBuyer(), voucherId)).json().success).toBe(true);
    for (let total = 2; total <= 4; total += 1) {
      await soldOutKnownOn(0, voucherId);
      if (total === 4) expect((await control('pause')).statusCode).toBe(200);
      expect((await patch({ stock: total })).json().data).toMatchObject({ stock: total, left: 1 });
      if (total === 4) expect((await control('resume')).json().data.paused).toBe(false);
      expect((await buy(instances[0]!, newBuyer(), voucherId)).json()).toMatchObject({ success: true });
    }
  });

  it("the instance whose canceller gives a unit back forgets the voucher's flag at once", async () => {
    const near = new NearCache(env.redis, { maxEntries: 100 });
    expect(await near.start()).toBe(true);
    const seckill = buildSeckill({ config: env.config, redis: env.redis, db: env.db, consumerName: 'sold-out-c', log: pino({ level: 'silent' }), near });
    try {
      const voucherId = await insertSeckillVoucher(env, { stock: 1 });
      const buyer = users[nextUser++]!.id;
      const orderId = await seckill.placement.place(buyer, voucherId);
      await expect(seckill.placement.place(users[nextUser++]!.id, voucherId)).rejects.toThrow(REFUSALS.soldOut);
      await eventually(() => expect(() => seckill.placement.refuseIfKnownSoldOut(voucherId)).toThrow(REFUSALS.soldOut));
      expect(await seckill.sale.settlement.release({ orderId, userId: buyer, voucherId, slot: 1 })).toBe(true);
      expect(() => seckill.placement.refuseIfKnownSoldOut(voucherId)).not.toThrow();
    } finally {
      await seckill.close();
      await near.close();
    }
  });

  it('forgets every flag when its near cache loses the invalidation connection (a missed push cannot leave a stale "Sold out")', async () => {
    const voucherId = await insertSeckillVoucher(env, { stock: 1 });
    expect((await buy(instances[0]!, newBuyer(), voucherId)).json().success).toBe(true);
    const { memory, near } = await soldOutMemoryOf(env, { keys: new SaleKeys(env.config.seckill.streamShards), sale });
    try {
      await memory.remember(voucherId);
      expect(memory.known(voucherId)).toBe(true);
      for (const id of near.invalidationClientIds) await env.redis.client('KILL', 'ID', String(id));
      await eventually(() => expect(memory.known(voucherId)).toBe(false));
    } finally {
      await near.close();
    }
  });
});
