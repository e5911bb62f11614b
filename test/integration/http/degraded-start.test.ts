import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startRedisServer, type RedisServer } from '../../../kit/redis-servers.js';
import { stallingRelay, type StallingRelay } from '../../support/stall.js';
import { createTestEnv, type TestEnv } from '../../support/test-env.js';
import { productionServerEnv } from '../../support/production-server.js';

/**
 * `npm start` with a Redis and a MySQL that accept connections and never answer: the server
 * still listens within a bounded time, degraded (health 503 naming both), logs which dependency
 * at which address, and serves fully once they answer, without a restart.
 */
let env: TestEnv;
let redisServer: RedisServer;
let redisRelay: StallingRelay;
let mysqlRelay: StallingRelay;

beforeAll(async () => {
  env = await createTestEnv();
  redisServer = await startRedisServer();
  redisRelay = await stallingRelay(redisServer.port);
  mysqlRelay = await stallingRelay(Number(new URL(env.mysqlUrl).port || 3306));
}, 30_000);

afterAll(async () => {
  await redisRelay?.close();
  await mysqlRelay?.close();
  await redisServer?.kill();
  await env?.cleanup();
});

async function health(port: number): Promise<{ status: number; body: { errorMsg?: string; data?: Record<string, string> } } | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/api/health`);
    return { status: response.status, body: (await response.json()) as { errorMsg?: string; data?: Record<string, string> } };
  } catch {
    return undefined; // not listening yet
  }
}

async function until<T>(probe: () => Promise<T | undefined>, timeoutMs: number, child: ChildProcess): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && child.exitCode === null) {
    const value = await probe();
    if (value !== undefined) return value;
    await sleep(100);
  }
  throw new Error(`not within ${timeoutMs} ms (exit code ${String(child.exitCode)})`);
}

describe('start-up with silent dependencies', () => {
  it('listens degraded with health 503 naming Redis and MySQL, then serves when they answer, without a restart', async () => {
    redisRelay.stall();
    mysqlRelay.stall();
    const port = await freePort();
    const mysqlUrl = new URL(env.mysqlUrl);
    mysqlUrl.port = String(mysqlRelay.port);
    let output = '';
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: {
        ...productionServerEnv('info'),
        PORT: String(port),
        HOST: '127.0.0.1',
        REDIS_URL: `redis://127.0.0.1:${redisRelay.port}/0`,
        MYSQL_URL: mysqlUrl.toString(),
        REDIS_KEY_PREFIX: env.keyPrefix,
        SECKILL_WORKER: 'true',
        REQUEST_DEADLINE_MS: '1000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    try {
      const started = Date.now();
      const degraded = await until(() => health(port), 30_000, child);
      expect(Date.now() - started).toBeLessThan(30_000);
      expect(degraded.status).toBe(503);
      expect(degraded.body.data).toMatchObject({ redis: 'stalled', mysql: 'stalled' });
      expect(degraded.body.errorMsg).toContain('Redis is not answering in time');
      expect(degraded.body.errorMsg).toContain('MySQL is not answering in time');
      await until(async () => (output.includes('serving degraded') ? true : undefined), 10_000, child);
      expect(output).toContain(`MySQL at mysql://root@127.0.0.1:${mysqlRelay.port}/`);
      expect(output).toContain(`Redis at redis://127.0.0.1:${redisRelay.port}/0`);

      redisRelay.resume();
      mysqlRelay.resume();
      let last: Awaited<ReturnType<typeof health>>;
      const healthy = await until(
        async () => {
          last = await health(port);
          return last?.status === 200 ? last : undefined;
        },
        15_000,
        child,
      ).catch((error: unknown) => {
        throw new Error(`${String(error)}; last health ${JSON.stringify(last)}; output ${output.slice(-3000)}`);
      });
      expect(healthy.body.data).toMatchObject({ redis: 'up', mysql: 'up' });
      expect(output).not.toContain('Unhandled error event');
    } finally {
      child.kill('SIGTERM');
      if (child.exitCode === null) await once(child, 'exit');
    }
  }, 90_000);
});
