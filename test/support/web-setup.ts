import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Global setup of the system tier: builds web/dist when missing or stale (the browser tests in
 * test/system/web load it from the app) and makes sure Debian's Chromium is installed
 * (scripts/browser.sh, apt-get; never a downloaded browser).
 */
export default function prepareWeb(): void {
  execFileSync(process.execPath, ['scripts/build-web.mjs'], { cwd: repo, stdio: 'inherit' });
  execFileSync('bash', ['scripts/browser.sh'], { cwd: repo, stdio: 'inherit' }); // returns at once when installed
}
