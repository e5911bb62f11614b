import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The .ts files under a folder of the repository, as paths relative to it. */
function tsFiles(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(folder, file));
}

/** Every module specifier a file imports (static and dynamic). */
function importsOf(file: string): string[] {
  const source = readFileSync(join(ROOT, file), 'utf8');
  return [...source.matchAll(/(?:from\s+|import\s*\(\s*)['"]([^'"]+)['"]/g)].map((match) => match[1]!);
}

/** What `file` imports that resolves into `folder`, as repository paths. */
function importsInto(file: string, folder: string): string[] {
  return importsOf(file)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => relative(ROOT, join(ROOT, file, '..', specifier)))
    .filter((target) => target.startsWith(`${folder}/`));
}

describe('layout: dependencies point inward, modules have one door', () => {
  it('the app, the CLIs and the bench reach a module only through its index.ts', () => {
    const entries = ['src/app.ts', ...tsFiles('src/cli'), ...tsFiles('bench')];
    const inner = entries.flatMap((file) =>
      importsInto(file, 'src/modules')
        .filter((target) => !/^src\/modules\/[^/]+\/index\.js$/.test(target))
        .map((target) => `${file} -> ${target}`),
    );
    expect(inner).toEqual([]);
  });

  it('src/lib never imports a module, the app or the infrastructure; bench never imports test/', () => {
    const fromLib = tsFiles('src/lib').flatMap((file) =>
      ['src/modules', 'src/infra', 'src/http', 'src/cli'].flatMap((folder) => importsInto(file, folder).map((target) => `${file} -> ${target}`)),
    );
    const fromBench = tsFiles('bench').flatMap((file) => importsInto(file, 'test').map((target) => `${file} -> ${target}`));
    expect([...fromLib, ...fromBench]).toEqual([]);
  });

  it('bench: a room of the bench is entered only through its index.ts', () => {
    const crossings = tsFiles('bench').flatMap((file) =>
      importsInto(file, 'bench')
        .filter((target) => dirname(target) !== dirname(file) && !target.endsWith('/index.js'))
        .map((target) => `${file} -> ${target}`),
    );
    expect(crossings).toEqual([]);
  });

  it("the sale's rooms are folders and only index.ts, the README and the shared files stand beside them", () => {
    const top = readdirSync(join(ROOT, 'src/modules/seckill'), { withFileTypes: true });
    const files = top.filter((entry) => entry.isFile()).map((entry) => entry.name);
    expect(files.sort()).toEqual(['README.md', 'error-routes.ts', 'index.ts', 'keys.ts', 'messages.ts', 'order-views.ts', 'types.ts']);
  });

  it('domain code is free of HTTP: in every module only its routes (*-routes.ts), route hooks (*-hooks.ts) and index.ts import src/http', () => {
    const files = tsFiles('src/modules').filter((file) => !/-routes\.ts$|-hooks\.ts$|\/index\.ts$/.test(file));
    const intoHttp = files.flatMap((file) => importsInto(file, 'src/http').map((target) => `${file} -> ${target}`));
    expect(files.length).toBeGreaterThan(100);
    expect(intoHttp).toEqual([]);
  });
});
