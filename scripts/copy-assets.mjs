// tsc emits only .js: copy the non-TypeScript files that code loads at run time
// (Lua scripts live next to the modules that load them) from src/ to dist/, or to the folder
// given as the first argument (the bench's compiled server: bench/harness/compiled-server.ts).
import { cp, readdir } from 'node:fs/promises';
import { join, dirname } from 'node:path';

const ASSET_EXTENSIONS = ['.lua'];

/** @param {string} dir @returns {AsyncGenerator<string>} */
async function* walk(dir) {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(path);
    else if (ASSET_EXTENSIONS.some((ext) => entry.name.endsWith(ext))) yield path;
  }
}

const targetRoot = process.argv[2] ?? 'dist';

for await (const file of walk('src')) {
  const target = join(targetRoot, file.slice('src/'.length));
  await cp(file, target, { force: true });
  console.log(`copied ${file} -> ${dirname(target)}/`);
}
