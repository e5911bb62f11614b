import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../kit/redis-servers.js';
import { silentListener, type SilentListener } from '../../support/stall.js';
import { createTestEnv, type TestEnv } from '../../support/test-env.js';

/**
 * Every command ends, with exit code 3 and a message naming the dependency and its address
 * (never its password), when Redis or MySQL accepts connections and never answers, or refuses them.
 */
let env: TestEnv;
let silent: SilentListener;

beforeAll(async () => {
  env = await createTestEnv();
  silent = await silentListener();
});

afterAll(async () => {
  await silent?.close();
  await env?.cleanup();
});

/**
 * A command that hangs is killed here and fails the test (exit code null). That it ended by its own
 * deadline (CLI_TIMEOUTS.connectMs, 5 s) is shown by its message; how long it took depends on the
 * machine's load (five processes start at once under tsx), so no test bets on the seconds.
 */
const KILL_AFTER_MS = 60_000;

async function run(script: string, args: string[], extraEnv: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', `src/cli/${script}.ts`, ...args], {
    env: { ...process.env, NODE_ENV: 'test', REDIS_KEY_PREFIX: env.keyPrefix, ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), KILL_AFTER_MS);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  return { code, stderr };
}

const MYSQL_COMMANDS: Array<[string, string[]]> = [
  ['migrate', []],
  ['seed', []],
  ['admin', ['list']],
  ['shop-index', []],
  ['reconcile', []],
];
const REDIS_COMMANDS: Array<[string, string[]]> = [
  ['admin', ['list']],
  ['shop-index', []],
  ['reconcile', []],
];

describe('commands against a dependency that does not answer', () => {
  it('every command exits 3 naming MySQL and its address (no password) when MySQL accepts and stays silent', async () => {
    const url = `mysql://root:sekrit@127.0.0.1:${silent.port}/hmdp`;
    const results = await Promise.all(MYSQL_COMMANDS.map(([script, args]) => run(script, args, { MYSQL_URL: url })));
    results.forEach((result, i) => {
      const script = MYSQL_COMMANDS[i]![0];
      expect({ script, code: result.code }).toEqual({ script, code: 3 });
      expect(result.stderr).toContain(`${script}: cannot run: MySQL at mysql://root:***@127.0.0.1:${silent.port}/hmdp`);
      expect(result.stderr).not.toContain('sekrit');
    });
  }, 150_000);

  it('the commands that use Redis exit 3 naming Redis and its address when Redis accepts and stays silent', async () => {
    const url = `redis://:sekrit@127.0.0.1:${silent.port}/0`;
    const results = await Promise.all(REDIS_COMMANDS.map(([script, args]) => run(script, args, { MYSQL_URL: env.mysqlUrl, REDIS_URL: url })));
    results.forEach((result, i) => {
      const script = REDIS_COMMANDS[i]![0];
      expect({ script, code: result.code }).toEqual({ script, code: 3 });
      expect(result.stderr).toContain(`${script}: cannot run: Redis at redis://:***@127.0.0.1:${silent.port}/0 did not answer in time`);
      expect(result.stderr).not.toContain('sekrit');
      expect(result.stderr).not.toContain('Unhandled error event');
    });
  }, 150_000);

  it('exits 3 saying the dependency is unreachable when nothing listens on its port', async () => {
    const closed = await freePort();
    const [mysql, redis] = await Promise.all([
      run('seed', [], { MYSQL_URL: `mysql://root@127.0.0.1:${closed}/hmdp` }),
      run('reconcile', [], { MYSQL_URL: env.mysqlUrl, REDIS_URL: `redis://127.0.0.1:${closed}/0` }),
    ]);
    expect(mysql.code).toBe(3);
    expect(mysql.stderr).toContain(`seed: cannot run: MySQL at mysql://root@127.0.0.1:${closed}/hmdp is unreachable`);
    expect(redis.code).toBe(3);
    expect(redis.stderr).toContain(`reconcile: cannot run: Redis at redis://127.0.0.1:${closed}/0`);
    expect(redis.stderr).not.toContain('Unhandled error event');
  }, 90_000);
});
