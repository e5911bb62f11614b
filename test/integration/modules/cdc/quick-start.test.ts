import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCdcWorld, type CdcWorld } from '../../../support/cdc-world.js';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const run = promisify(execFile);
const isRoot = process.getuid?.() === 0;

/**
 * What scripts/start.sh adds for the change follower: the binlog turned on (scripts/mariadb-binlog.sh,
 * run in namespaces by scripts/fresh-binlog-check.sh, never against the shared MariaDB), and the
 * follower started from the shell that then becomes the app, stopped once the app ends.
 */
describe('quick start: the binlog and the follower beside the app', () => {
  // Four MariaDB starts in namespaces of their own (mariadb-install-db, three restarts): ~10 s, more on a busy machine.
  it.skipIf(!isRoot)(
    'scripts/mariadb-binlog.sh as on a fresh Debian machine (scripts/fresh-binlog-check.sh, root: namespaces)',
    { timeout: 180_000 },
    async () => {
      const { stdout } = await run('bash', ['scripts/fresh-binlog-check.sh'], { cwd: ROOT, timeout: 170_000, maxBuffer: 10 * 1024 * 1024 }).catch(
        (error: unknown) => {
          const failed = error as { stdout?: string; stderr?: string; message: string };
          throw new Error(`scripts/fresh-binlog-check.sh failed:\n${failed.stdout ?? ''}${failed.stderr ?? ''}\n${failed.message}`, { cause: error });
        },
      );
      for (const step of [1, 2, 3, 4]) expect(stdout).toMatch(new RegExp(`^fresh-binlog-check: ${step}\\. .*: ok$`, 'm'));
      expect(stdout).toMatch(/^fresh-binlog-check: ok$/m);
    },
  );

  describe('the follower started as scripts/start.sh starts it', { timeout: 120_000 }, () => {
    let world: CdcWorld;

    beforeAll(async () => {
      world = await startCdcWorld();
    }, 120_000);

    afterAll(async () => {
      await world?.close();
    }, 120_000);

    it('stops, releasing its lease, once the process that became the app (exec) is SIGKILLed', async () => {
      // As start.sh: the follower in the background, then the shell execs the app (here: sleep) in its place.
      const shell = spawn('bash', ['-c', 'node --import tsx src/cli/cdc.ts --stop-with-parent & echo "follower $!"; exec sleep 600'], {
        cwd: ROOT,
        env: { ...process.env, ...world.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      shell.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
      // The pipe ends once every process holding it has ended: the shell (the "app") and the follower.
      const closed = new Promise<void>((resolve) => shell.stdout.once('end', () => resolve()));
      let followerPid: number | undefined;
      try {
        await waitFor(
          () => /change follower: active/.test(output),
          60_000,
          () => output,
        );
        followerPid = Number(/^follower (\d+)$/m.exec(output)![1]);
        expect(await world.redis.exists('lock:{cdc:follower}')).toBe(1);

        shell.kill('SIGKILL');
        const ended = await Promise.race([closed.then(() => true), new Promise<false>((resolve) => setTimeout(() => resolve(false), 15_000))]);
        expect(ended, output).toBe(true);
        expect(output).toContain('its parent process ended, stopping the change follower');
        expect(await world.redis.exists('lock:{cdc:follower}')).toBe(0);
      } finally {
        shell.kill('SIGKILL');
        if (followerPid !== undefined) {
          try {
            process.kill(followerPid, 'SIGKILL');
          } catch {
            // ended, as it should have
          }
        }
      }
    });
  });
});

async function waitFor(check: () => boolean, timeoutMs: number, describe: () => string): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms: ${describe()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
