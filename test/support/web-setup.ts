import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../..', import.meta.url));

async function run(command: string, args: string[]): Promise<void> {
  const child = spawn(command, args, { cwd: repo, stdio: 'inherit' });
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${String(code)}`);
}

/**
 * Global setup of the system project: builds web/dist when missing or stale (the browser tests in
 * test/system/web load it from the app) and makes sure the Debian packages its tests run are
 * installed: Chromium (scripts/browser.sh; never a downloaded browser), then the edge's nginx and
 * Lua libraries (edge/packages.sh; test/system/edge and the topology), one after the other, since
 * two apt-gets at once fight over dpkg's lock. The installs mostly wait on the network, the build
 * on the CPU: the two run side by side. Each returns at once when already done.
 */
export default async function prepareWeb(): Promise<void> {
  const installs = async (): Promise<void> => {
    await run('bash', ['scripts/browser.sh']);
    await run('bash', ['-c', 'bash edge/packages.sh >/dev/null']);
  };
  await Promise.all([run(process.execPath, ['scripts/build-web.mjs']), installs()]);
}
