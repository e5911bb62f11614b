/** `npm run bench -- growth [options]`: parses the options, runs the sections, prints the report and writes the docs. */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runGrowth } from './growth.js';
import { renderGrowth, writeGrowthDocs } from './render.js';
import { SECTIONS, type Section } from './report.js';

export const GROWTH_USAGE = `npm run bench -- growth [options]

  --only LIST        comma-separated, from: ${SECTIONS.join(', ')} (default: all; 6–10 min)
  --connection-rate N  offered req/s of the connections section (default 2000; lower on a busy machine)
  --quick            sizes ÷ 100 and short slices, writes nothing (a check that it runs)
  --no-write         do not update docs/bench-growth.md and docs/bench/growth.svg
  --docs-dir DIR     default docs
  --json             one JSON document on stdout

Environment: MYSQL_SERVER_URL (default mysql://root@127.0.0.1:3306). Redis: servers of its own.`;

export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        only: { type: 'string' },
        'connection-rate': { type: 'string', default: '2000' },
        quick: { type: 'boolean', default: false },
        'no-write': { type: 'boolean', default: false },
        'docs-dir': { type: 'string' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
      strict: true,
    });
  } catch (error) {
    console.error(`bench growth: ${(error as Error).message}\n\n${GROWTH_USAGE}`);
    return 2;
  }
  const { values } = parsed;
  if (values.help) {
    console.log(GROWTH_USAGE);
    return 0;
  }
  const only = (values.only ?? SECTIONS.join(',')).split(',').map((name) => name.trim());
  const unknown = only.filter((name) => !(SECTIONS as readonly string[]).includes(name));
  if (unknown.length > 0) {
    console.error(`bench growth: unknown section ${unknown.join(', ')} (known: ${SECTIONS.join(', ')})`);
    return 2;
  }
  const connectionRate = Number(values['connection-rate']);
  if (!Number.isInteger(connectionRate) || connectionRate < 1) {
    console.error(`bench growth: --connection-rate: expected a whole number above 0, got "${values['connection-rate']}"`);
    return 2;
  }
  const report = await runGrowth(only as Section[], values.quick, ['npm run bench -- growth', ...argv].join(' '), connectionRate);
  console.log(values.json ? JSON.stringify(report, null, 2) : renderGrowth(report));
  if (!values['no-write'] && !values.quick) {
    const docsDir = values['docs-dir'] ?? 'docs';
    await writeGrowthDocs(report, docsDir);
    console.error(`wrote ${join(docsDir, 'bench-growth.md')} and ${join(docsDir, 'bench', 'growth.svg')}`);
  }
  return 0;
}
