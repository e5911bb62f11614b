import type { FastifyInstance } from 'fastify';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics, type Metrics } from '../../../../src/infra/metrics.js';
import { REFUSALS } from '../../../../src/modules/seckill/messages.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, sessionOf, type TestEnv } from '../../../support/test-env.js';
import { buy } from '../../../support/seckill.js';
import { eventually } from '../../../support/eventually.js';

/**
 * The probe of issue 40 (3): a sale sold out on instances A and B; A raises the stock; B's next
 * orders must not be told "Sold out" while units remain. B learns of the raise from Redis' push
 * (the near cache's invalidation of the sale's hashes), which is on the wire when A's raise is
 * answered: the burst goes out once B's event loop has polled its sockets after the raise (a
 * timer, then setImmediate, which runs after that turn's poll), not after a poll of B's own.
 */

let env: TestEnv;
let instances: FastifyInstance[];
let metrics: Metrics[];
let users: Array<{ id: string; token: string }>;
let admin: Record<string, string>;
let nextUser = 0;

beforeAll(async () => {
  env = await createTestEnv({ SECKILL_STRATEGY: 'async', SECKILL_WORKER: 'true', SECKILL_MAX_BUCKETS: '8' });
  users = await createUsersWithSessions(env, 400);
  metrics = [createMetrics(), createMetrics()];
  instances = [];
  for (const [index, consumerName] of ['raise-a', 'raise-b'].entries()) {
    instances.push((await buildTestApp(env, undefined, { consumerName, metrics: metrics[index] })).app);
  }
  admin = await sessionOf(env, '999010', 'admin');
  await env.db.insertInto('tb_shop').values({ id: '1', name: 'shop', type_id: '1', address: 'road 1', x: 120.15, y: 30.33 }).execute();
});

afterAll(async () => {
  for (const app of instances ?? []) await app.close();
  await env?.cleanup();
});

const [A, B] = [0, 1];
const newBuyer = () => users[nextUser++]!.token;
const knownRefusals = async (index: number) =>
  (await metrics[index]!.seckillRequests.get()).values.find((value) => value.labels.outcome === 'sold-out-known')?.value ?? 0;

async function createSale(stock: number, buckets: number): Promise<string> {
  const created = await instances[A]!.inject({
    method: 'POST',
    url: '/api/voucher/seckill',
    headers: admin,
    payload: {
      shopId: '1',
      title: 'raised',
      payValue: 100,
      actualValue: 200,
      stock,
      buckets,
      beginTime: new Date(Date.now() - 60_000).toISOString(),
      endTime: new Date(Date.now() + 3_600_000).toISOString(),
    },
  });
  expect(created.json()).toMatchObject({ success: true });
  return created.json().data as string;
}

/** Buys on `index` until Redis says "Sold out" and the instance then answers it from memory. */
async function soldOutKnownOn(index: number, voucherId: string): Promise<void> {
  const before = await knownRefusals(index);
  await eventually(async () => {
    const body = (await buy(instances[index]!, newBuyer(), voucherId)).json();
    expect(body.errorMsg).toBe(REFUSALS.soldOut);
    expect(await knownRefusals(index)).toBeGreaterThan(before);
  }, 10_000);
}

/** The error messages of a burst of orders on `index` at once (success: none). */
async function burst(index: number, voucherId: string, orders: number): Promise<Array<string | undefined>> {
  const answers = await Promise.all(Array.from({ length: orders }, () => buy(instances[index]!, newBuyer(), voucherId)));
  return answers.map((answer) => answer.json().errorMsg as string | undefined);
}

describe('a raise on one instance reaches the sold-out memory of another at once (issue 40, 3)', () => {
  it.each([1, 3])('buckets %i: after A raises, a burst on B is never told "Sold out" while units remain', async (buckets) => {
    let stock = 6;
    const voucherId = await createSale(stock, buckets);
    await soldOutKnownOn(B, voucherId);
    await soldOutKnownOn(A, voucherId);
    // Rounds: a poll of B's own (none since the push) falling between a raise and its burst cannot pass them all.
    for (let round = 0; round < 3; round += 1) {
      stock += 20;
      const raised = await instances[A]!.inject({ method: 'PATCH', url: `/api/voucher/seckill/${voucherId}`, headers: admin, payload: { stock } });
      expect(raised.json().data).toMatchObject({ stock, left: 20 });
      await sleep(20);
      await new Promise((resolve) => setImmediate(resolve));
      expect(await burst(B, voucherId, 10)).not.toContain(REFUSALS.soldOut);
      // The other 10 units and then "Sold out", known by B again for the next round.
      await soldOutKnownOn(B, voucherId);
    }
  });
});
