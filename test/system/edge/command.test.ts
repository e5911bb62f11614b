import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDemoData } from '../../../src/infra/seed/load-demo-data.js';
import { accepting } from '../../../kit/ports.js';
import { freePort } from '../../../kit/redis-servers.js';
import { testRedisUrl } from '../../../kit/services.js';
import { buildTestApp, createTestEnv, type TestEnv } from '../../support/test-env.js';

/**
 * The documented command, `scripts/edge.sh start|status|stop`, in front of one app instance: run
 * with the app's environment, it serves the app's shop from the app's Redis record, and stops by
 * its pid.
 */
const run = promisify(execFile);
let env: TestEnv;
let app: FastifyInstance;
let appUrl: string;
let dir: string;
let port: number;
let edgeEnv: NodeJS.ProcessEnv;

const edge = (command: string) => run('bash', ['scripts/edge.sh', command], { env: edgeEnv, timeout: 60_000 });

beforeAll(async () => {
  env = await createTestEnv();
  await loadDemoData(env.db);
  ({ app } = await buildTestApp(env));
  appUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  dir = await mkdtemp(join(tmpdir(), 'hmdp-edge-command-'));
  port = await freePort();
  // The app's own settings (as its environment would give them), and the edge's.
  edgeEnv = {
    ...process.env,
    NODE_ENV: 'test',
    REDIS_URL: testRedisUrl(),
    REDIS_KEY_PREFIX: env.keyPrefix,
    MYSQL_URL: env.mysqlUrl,
    DEFAULT_LANGUAGE: 'en',
    EDGE_DIR: dir,
    EDGE_LISTEN: `127.0.0.1:${port}`,
    EDGE_APP: appUrl.replace('http://', ''),
    EDGE_WORKERS: '1',
  };
}, 60_000);

afterAll(async () => {
  if (edgeEnv) await edge('stop').catch(() => undefined);
  await app?.close();
  await env?.cleanup();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('scripts/edge.sh', () => {
  it("starts nginx in front of the app with reads on, answers the app's shop, reports and stops", async () => {
    const { stdout } = await edge('start');
    expect(stdout).toMatch(/edge: started \(pid \d+\)/);
    expect((await edge('status')).stdout).toContain(`http://127.0.0.1:${port} -> ${appUrl.replace('http://', '')}`);

    const direct = await (await fetch(`${appUrl}/api/shop/1`)).text(); // cached by the app
    const viaEdge = await fetch(`http://127.0.0.1:${port}/api/shop/1`);
    expect(viaEdge.status).toBe(200);
    expect(await viaEdge.text()).toBe(direct);
    expect(await (await fetch(`http://127.0.0.1:${port}/_edge/status`)).json()).toMatchObject({ reads: true });
    // Anything else is the app's, through the same nginx.
    expect((await fetch(`http://127.0.0.1:${port}/api/health`)).status).toBe(200);

    const pid = Number(await readFile(join(dir, 'nginx.pid'), 'utf8'));
    expect((await edge('stop')).stdout).toContain(`edge: stopped (pid ${pid})`);
    expect(await accepting(port)).toBe(false);
    await expect(edge('status')).rejects.toMatchObject({ code: 3 });
  });
});
