import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTcpProxy, type TcpProxy } from '../../../../bench/faults/proxy/tcp-proxy.js';
import { createDb, type Db } from '../../../../src/infra/db.js';
import { createMetrics, type Metrics } from '../../../../src/infra/metrics.js';
import { buildSeckill } from '../../../../src/modules/seckill/index.js';
import { ORDER_GROUP } from '../../../../src/modules/seckill/keys.js';
import { createTestEnv, type TestEnv } from '../../../support/test-env.js';
import { HOUR, insertSeckillVoucher, mysqlOrders, mysqlStock } from '../../../support/seckill.js';
import { eventually } from '../../../support/eventually.js';

const SHARDS = 2;
const BACKLOG = 1000;
const OUTAGE_MS = 4000;

let env: TestEnv;
let proxy: TcpProxy;
let proxiedDb: Db;
let metrics: Metrics;
let seckill: ReturnType<typeof buildSeckill>;

beforeAll(async () => {
  env = await createTestEnv({ SECKILL_STREAM_SHARDS: String(SHARDS), SECKILL_WORKER_BATCH: '100' });
  const target = new URL(env.mysqlUrl);
  proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 3306) });
  const proxied = new URL(env.mysqlUrl);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(proxy.port);
  proxiedDb = createDb({ mysqlUrl: proxied.toString(), poolSize: 10 });
  metrics = createMetrics();
  // The worker reaches MySQL through the proxy only; the test reads MySQL directly.
  seckill = buildSeckill({ config: env.config, redis: env.redis, db: proxiedDb, metrics, consumerName: 'breaker-test', log: pino({ level: 'silent' }) });
});

afterAll(async () => {
  await seckill?.close();
  await proxiedDb?.destroy();
  await proxy?.close();
  await env?.cleanup();
});

/** One sample of a scrape; 0 when absent. */
async function sample(name: string, labels: string): Promise<number> {
  const text = await metrics.render();
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name}{${labels}} `));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

const attempts = async (kind: 'write' | 'probe') => sample('seckill_worker_mysql_attempts_total', `kind="${kind}"`);

async function backlog(): Promise<{ pending: number; queued: number; dead: number }> {
  let pending = 0;
  let queued = 0;
  let dead = 0;
  for (const shard of seckill.keys.allShards()) {
    const keys = seckill.keys.shard(shard);
    const summary = (await env.redis.xpending(keys.stream, ORDER_GROUP).catch(() => [0])) as [number];
    pending += summary[0];
    queued += await env.redis.hlen(keys.queued);
    dead += await env.redis.xlen(keys.deadLetters);
  }
  return { pending, queued, dead };
}

describe('order worker: circuit breaker and backoff on MySQL', () => {
  it('with MySQL refusing connections and 1,000 orders queued, tries MySQL a bounded number of times, dead-letters nothing, then catches up exactly once', async () => {
    const stock = 2 * BACKLOG;
    const voucherId = await insertSeckillVoucher(env, { stock });
    await seckill.sale.publisher.publish({ voucherId, stock, begin: new Date(Date.now() - HOUR), end: new Date(Date.now() + HOUR) });
    const accepted: string[] = [];
    for (let first = 0; first < BACKLOG; first += 200) {
      const users = Array.from({ length: 200 }, (_, i) => String(100_000 + first + i));
      accepted.push(...(await Promise.all(users.map((userId) => seckill.placement.place(userId, voucherId)))));
    }
    expect((await backlog()).queued).toBe(BACKLOG);

    proxy.cut();
    seckill.startJobs();
    await eventually(async () => expect(await sample('seckill_worker_breaker_state', 'state="open"')).toBe(1), 5_000);
    const probesAtOpen = await attempts('probe');
    const refusedAtOpen = proxy.connectionsRefused;
    await sleep(OUTAGE_MS);
    // Five consecutive failures open the circuit (a batch in flight per shard may add one each);
    // open, no write is tried, however long the outage: writes over the whole outage stay at that.
    // (Counted at the end, not 300 ms after the opening: a batch in flight may fail later than that
    // on a busy machine.) And one probe at a time, the waits roughly doubling from ~0.5 s; a loop
    // paced by the backlog (today's: each pending entry once a second) makes thousands.
    expect(await attempts('write')).toBeLessThanOrEqual(5 + SHARDS);
    const probes = (await attempts('probe')) - probesAtOpen;
    expect(probes).toBeGreaterThan(0);
    expect(probes).toBeLessThanOrEqual(OUTAGE_MS / 500);
    expect(proxy.connectionsRefused - refusedAtOpen).toBeLessThanOrEqual(2 * probes + 2);
    // Every probe failed (retried: one may be in flight between the two samples).
    await eventually(async () =>
      expect(await sample('seckill_worker_mysql_failures_total', 'kind="probe"')).toBe(await sample('seckill_worker_mysql_attempts_total', 'kind="probe"')),
    );
    expect(await backlog()).toMatchObject({ queued: BACKLOG, dead: 0 });
    expect(await mysqlOrders(env, voucherId)).toHaveLength(0);

    proxy.restore();
    await eventually(async () => expect(await backlog()).toEqual({ pending: 0, queued: 0, dead: 0 }), 30_000);
    const orders = await mysqlOrders(env, voucherId);
    expect(orders).toHaveLength(BACKLOG);
    expect(new Set(orders.map((order) => order.id))).toEqual(new Set(accepted));
    expect(await mysqlStock(env, voucherId)).toBe(stock - BACKLOG);
    expect(await sample('seckill_worker_breaker_state', 'state="closed"')).toBe(1);
    expect(await sample('seckill_worker_breaker_state', 'state="open"')).toBe(0);
    expect(await sample('seckill_worker_entries_total', 'result="created"')).toBe(BACKLOG);
  }, 60_000);
});
