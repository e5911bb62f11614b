import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testRedisUrl } from '../../../kit/services.js';
import { createTestEnv, metricsAuth, TEST_METRICS_TOKEN, type TestEnv } from '../../support/test-env.js';

/** The standalone order worker serves its own series on WORKER_METRICS_PORT, for Prometheus (the topology scrapes it). */
let env: TestEnv;
let child: ChildProcess | undefined;
let port: number;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: free } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return free;
}

beforeAll(async () => {
  env = await createTestEnv();
  port = await freePort();
  child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/order-worker.ts'], {
    env: {
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      MYSQL_URL: env.mysqlUrl,
      REDIS_URL: testRedisUrl(),
      REDIS_KEY_PREFIX: env.keyPrefix,
      SECKILL_CONSUMER: 'metrics-test',
      METRICS_TOKEN: TEST_METRICS_TOKEN,
      WORKER_METRICS_PORT: String(port),
      HOST: '127.0.0.1',
    },
    stdio: 'ignore',
  });
});

afterAll(async () => {
  if (child?.exitCode === null) {
    const exited = new Promise((resolve) => child!.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  await env?.cleanup();
});

const scrape = (headers: Record<string, string> = {}) => fetch(`http://127.0.0.1:${port}/metrics`, { headers });

describe('the order worker process', () => {
  it("serves GET /metrics with the worker's breaker and stream series to a scraper holding METRICS_TOKEN, 401 otherwise", async () => {
    await expect.poll(async () => (await scrape(metricsAuth).catch(() => undefined))?.status, { timeout: 20_000 }).toBe(200);
    const text = await (await scrape(metricsAuth)).text();
    expect(text).toContain('seckill_worker_breaker_state{state="closed"} 1');
    expect(text).toMatch(/^seckill_consumer_lag\{shard="0"\} /m);
    expect((await scrape()).status).toBe(401);
    expect((await scrape({ authorization: 'Bearer wrong-token-0123456789' })).status).toBe(401);
    expect((await fetch(`http://127.0.0.1:${port}/api/health`)).status).toBe(404);
  });
});
