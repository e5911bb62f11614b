#!/usr/bin/env node
// Builds the web front end (web/ → web/dist) when the build is missing or stale: stale means the
// SHA-256 of web/src, web/index.html, web/vite.config.ts, web/tsconfig.json and package-lock.json
// differs from the one stored in web/dist/.build-hash by the last build. `--force` always builds.
// Used by scripts/start.sh and the test setup (test/support/web-setup.ts); `npm run build:web` forces.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('..', import.meta.url));
const web = join(repo, 'web');
const hashFile = join(web, 'dist', '.build-hash');

function files(path) {
  if (!existsSync(path)) return [];
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .sort()
    .flatMap((name) => files(join(path, name)));
}

function sourceHash() {
  const hash = createHash('sha256');
  const inputs = [join(web, 'src'), join(web, 'index.html'), join(web, 'vite.config.ts'), join(web, 'tsconfig.json'), join(repo, 'package-lock.json')];
  for (const file of inputs.flatMap(files)) {
    hash.update(relative(repo, file)).update('\0').update(readFileSync(file)).update('\0');
  }
  return hash.digest('hex');
}

const want = sourceHash();
const have = existsSync(hashFile) ? readFileSync(hashFile, 'utf8').trim() : '';
if (!process.argv.includes('--force') && have === want && existsSync(join(web, 'dist', 'index.html'))) {
  process.exit(0);
}
console.log('web: building the front end (vite build web)');
const { build } = await import('vite');
await build({ root: web, configFile: join(web, 'vite.config.ts'), logLevel: 'warn' });
writeFileSync(hashFile, `${want}\n`);
