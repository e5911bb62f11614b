import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv } from '../../support/test-env.js';
import { freePort } from '../../../kit/redis-servers.js';
import { productionServerEnv } from '../../support/production-server.js';

let env: TestEnv;

beforeAll(async () => {
  env = await createTestEnv();
});

afterAll(async () => {
  await env?.cleanup();
});

function startServer(extraEnv: Record<string, string>): { child: ChildProcess; output: () => string } {
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: {
      ...productionServerEnv('info'),
      ...extraEnv,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  return { child, output: () => output };
}

async function waitForHealth(port: number, child: ChildProcess): Promise<Response> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline && child.exitCode === null) {
    try {
      return await fetch(`http://127.0.0.1:${port}/api/health`);
    } catch {
      await sleep(100);
    }
  }
  throw new Error('server did not come up');
}

describe('the server process', () => {
  it('serves on PORT, then on SIGTERM stops accepting, closes its pools and exits 0', async () => {
    const port = await freePort();
    const { child, output } = startServer({
      PORT: String(port),
      HOST: '127.0.0.1',
      MYSQL_URL: env.mysqlUrl,
      REDIS_KEY_PREFIX: env.keyPrefix,
    });
    try {
      const health = await waitForHealth(port, child);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ success: true, data: { redis: 'up', mysql: 'up' } });

      child.kill('SIGTERM');
      const [code] = await once(child, 'exit');
      expect(code).toBe(0);
      expect(output()).toContain('SIGTERM received, shutting down');
      await expect(fetch(`http://127.0.0.1:${port}/api/health`)).rejects.toThrow();
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('refuses to start on a bad variable, naming it', async () => {
    const { child, output } = startServer({ PORT: 'eighty' });
    const [code] = await once(child, 'exit');
    expect(code).toBe(1);
    expect(output()).toContain('Invalid environment variable PORT="eighty"');
  });

  it('refuses to start in production without SMS_SENDER: the log sender must be chosen explicitly', async () => {
    const { child, output } = startServer({ SMS_SENDER: '', MYSQL_URL: env.mysqlUrl, REDIS_KEY_PREFIX: env.keyPrefix, PORT: String(await freePort()) });
    const [code] = await once(child, 'exit');
    expect(code).toBe(1);
    expect(output()).toContain('SMS_SENDER is not set');
  });
});
