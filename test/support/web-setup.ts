import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Runs once before all test files: builds web/dist when missing or stale (the browser tests in
 * test/web load it from the app) and makes sure Debian's Chromium is installed (scripts/browser.sh,
 * apt-get; never a downloaded browser).
 */
export default function prepareWeb(): void {
  execFileSync(process.execPath, ['scripts/build-web.mjs'], { cwd: repo, stdio: 'inherit' });
  execFileSync('bash', ['scripts/browser.sh'], { cwd: repo, stdio: 'inherit' }); // returns at once when installed
}
