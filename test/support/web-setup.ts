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
 * test/system/web load it from the app) and makes sure Debian's Chromium is installed
 * (scripts/browser.sh, apt-get; never a downloaded browser), side by side: the install mostly
 * waits on the network, the build on the CPU. Both return at once when already done.
 */
export default async function prepareWeb(): Promise<void> {
  await Promise.all([run(process.execPath, ['scripts/build-web.mjs']), run('bash', ['scripts/browser.sh'])]);
}
