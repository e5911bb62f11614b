/**
 * `npm run docs:config`: writes the configuration table of README.md (between the config-table
 * markers) from `ENV_VARS` of src/infra/config.ts, the rows of the settings declared in
 * src/infra/config/settings.ts. `--check` writes nothing and exits 1 when the table is stale.
 * test/unit/config-docs.test.ts runs the same check.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ENV_VARS, type EnvVar } from '../src/infra/config.js';

export const README = fileURLToPath(new URL('../README.md', import.meta.url));
export const BEGIN = '<!-- config-table:start (written by npm run docs:config from the settings in src/infra/config/settings.ts) -->';
export const END = '<!-- config-table:end -->';

const cell = (text: string): string => text.replaceAll('|', '\\|');

export function shownDefault(variable: EnvVar): string {
  if (variable.shown !== undefined) return variable.shown;
  return variable.default === '' ? '(empty)' : `\`${variable.default}\``;
}

export function renderConfigTable(variables: readonly EnvVar[] = ENV_VARS): string {
  const rows = variables.map((variable) => `| \`${variable.name}\` | ${cell(shownDefault(variable))} | ${cell(variable.meaning)} |`);
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n');
}

/** The README with its table replaced; throws when the markers are missing. */
export function withConfigTable(readme: string, table: string = renderConfigTable()): string {
  const start = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) throw new Error(`README.md lacks the markers ${BEGIN} … ${END}`);
  return `${readme.slice(0, start)}${BEGIN}\n${table}\n${readme.slice(end)}`;
}

function main(): void {
  const current = readFileSync(README, 'utf8');
  const next = withConfigTable(current);
  if (process.argv.includes('--check')) {
    if (next !== current) {
      console.error('README.md configuration table is stale: run npm run docs:config');
      process.exit(1);
    }
    console.log('README.md configuration table is up to date');
    return;
  }
  if (next !== current) writeFileSync(README, next);
  console.log(next === current ? 'README.md configuration table unchanged' : 'README.md configuration table written');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) main();
