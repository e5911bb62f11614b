import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

/** The packages loaded by importing everything `file` imports. */
async function packagesLoadedBy(file: string): Promise<{ imported: string[]; packages: string[] }> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'test/unit/fixtures/packages-loaded-by.ts', file]);
  return JSON.parse(stdout) as { imported: string[]; packages: string[] };
}

const isHttpFramework = (name: string): boolean => name === 'fastify' || name.startsWith('@fastify/');

describe('the standalone order worker', () => {
  it('builds the sale without loading Fastify or any of its plugins', async () => {
    const worker = await packagesLoadedBy('src/cli/order-worker.ts');
    expect(worker.imported).toContain('../modules/seckill/index.js');
    expect(worker.packages).toContain('ioredis');
    expect(worker.packages.filter(isHttpFramework)).toEqual([]);
  });

  it('is told apart from the app process, which does load Fastify', async () => {
    const app = await packagesLoadedBy('src/main.ts');
    expect(app.packages).toContain('fastify');
  });
});
