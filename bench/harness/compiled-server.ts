/**
 * The bench's servers run what production runs: JavaScript compiled by tsc (as `npm run build`
 * makes dist/), not TypeScript through tsx. tsx's esbuild transform keeps function names by
 * wrapping every function expression created at run time in a `__name` call, a cost production
 * never pays (1–2 % of the server's CPU in profiles of the cached shop and the seckill order).
 *
 * Compiled once per bench process, without type checking (the lint does that), into a directory
 * of its own under node_modules/.cache, so that the server's bare imports find the repository's
 * packages, and removed when the process exits. A process given `BENCH_SERVER_ENTRY` uses that
 * build instead: the test run compiles one for all its files (test/support/bench-server-setup.ts).
 */
import { execFile } from 'node:child_process';
import { cp, readdir, rm, symlink } from 'node:fs/promises';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const REPOSITORY = new URL('../..', import.meta.url).pathname;
const TSC = join(REPOSITORY, 'node_modules/typescript/bin/tsc');
const PROJECT = join(REPOSITORY, 'bench/tsconfig.server.json');
/** Where a compiled module sits; profile.ts maps it back to its source path. */
export const COMPILED_ROOT_PATTERN = /^file:\/\/.*\/node_modules\/\.cache\/hmdp-bench-server-\d+\//;

const PREFIX = 'hmdp-bench-server-';

let compiled: Promise<string> | undefined;

/** The path of bench/server/main.js compiled from the working tree (compiled on the first call). */
export function compiledServerEntry(): Promise<string> {
  const given = process.env.BENCH_SERVER_ENTRY;
  compiled ??= given ? Promise.resolve(given) : compile();
  return compiled;
}

async function compile(): Promise<string> {
  const cache = join(REPOSITORY, 'node_modules/.cache');
  await removeOrphans(cache);
  const outDir = join(cache, `${PREFIX}${process.pid}`);
  process.once('exit', () => rmSync(outDir, { recursive: true, force: true }));
  const run = promisify(execFile);
  await run(process.execPath, [TSC, '-p', PROJECT, '--outDir', outDir], { cwd: REPOSITORY });
  // What the compiled code reads at run time besides JavaScript: the Lua scripts (as the build
  // copies them to dist/), the package manifest (OpenAPI's version; "type": "module") and the
  // built front end, where the server looks for it beside its own code (served if built).
  await run(process.execPath, [join(REPOSITORY, 'scripts/copy-assets.mjs'), join(outDir, 'src')], { cwd: REPOSITORY });
  await cp(join(REPOSITORY, 'package.json'), join(outDir, 'package.json'));
  await symlink(join(REPOSITORY, 'web'), join(outDir, 'web'), 'dir');
  return join(outDir, 'bench/server/main.js');
}

/** Copies left by bench processes that were killed (a signal skips the exit hook): their pid is gone. */
async function removeOrphans(cache: string): Promise<void> {
  const names = await readdir(cache).catch(() => []);
  for (const name of names) {
    const pid = name.startsWith(PREFIX) ? Number(name.slice(PREFIX.length)) : Number.NaN;
    if (Number.isInteger(pid) && !isAlive(pid)) await rm(join(cache, name), { recursive: true, force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
