/**
 * `npm run docs:testing`: writes the suite's size and time into docs/testing.md (between the
 * suite-size markers) from the report of the last whole run (test-results/suite-report.json, written
 * by test/support/suite-report.ts on every run): files and tests per project, and the slowest files.
 * A report that misses test files on disk (a partial run) is refused. test/unit/testing-doc.test.ts
 * fails when the files counted there differ from the files on disk.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import config from '../vitest.config.js';
import { FILE_TIMES, SUITE_REPORT, type SuiteReport } from '../test/support/suite-report.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const TESTING_DOC = `${ROOT}docs/testing.md`;
export const BEGIN = '<!-- suite-size:start (written by npm run docs:testing from the last whole run) -->';
export const END = '<!-- suite-size:end -->';
const SLOWEST = 10;

/** Each project's folders, from vitest.config.ts (its includes are all `<folder>/**\/*.test.ts`). */
export function projectFolders(): Array<{ name: string; folders: string[] }> {
  return (config.test?.projects ?? []).map((project) => {
    if (typeof project !== 'object' || !('test' in project) || !project.test?.name || !project.test.include) {
      throw new Error('vitest.config.ts: every project needs a name and an include');
    }
    const name = typeof project.test.name === 'string' ? project.test.name : project.test.name.label;
    const folders = project.test.include.map((pattern) => {
      if (!pattern.endsWith('/**/*.test.ts')) throw new Error(`vitest.config.ts: ${name} includes ${pattern}, not <folder>/**/*.test.ts`);
      return pattern.slice(0, -'**/*.test.ts'.length);
    });
    return { name, folders };
  });
}

/** The test files on disk by project, paths relative to the repository. */
export function filesOnDisk(): Map<string, string[]> {
  const files = (readdirSync(`${ROOT}test`, { recursive: true }) as string[])
    .filter((path) => path.endsWith('.test.ts'))
    .map((path) => `test/${path}`)
    .sort();
  const byProject = new Map<string, string[]>();
  for (const { name, folders } of projectFolders()) {
    byProject.set(
      name,
      files.filter((file) => folders.some((folder) => file.startsWith(folder))),
    );
  }
  return byProject;
}

/** The files counted in the doc's block, by project (the `| project | files | tests |` rows). */
export function filesInDoc(doc: string): Map<string, number> {
  const block = doc.slice(doc.indexOf(BEGIN), doc.indexOf(END));
  const counts = new Map<string, number>();
  for (const match of block.matchAll(/^\| `?([a-z]+)`? \| (\d+) \| \d+ \|/gm)) counts.set(match[1]!, Number(match[2]));
  return counts;
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const minutes = (ms: number): string => (ms < 60_000 ? `${Math.round(ms / 1000)} s` : `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`);

export function renderBlock(report: SuiteReport): string {
  const rows = projectFolders().map(({ name }) => {
    const files = report.files.filter((file) => file.project === name);
    const tests = files.reduce((sum, file) => sum + file.tests, 0);
    const time = files.reduce((sum, file) => sum + file.durationMs, 0);
    return `| ${name} | ${files.length} | ${tests} | ${minutes(time)} |`;
  });
  const tests = report.files.reduce((sum, file) => sum + file.tests, 0);
  const slowest = [...report.files]
    .sort((a, b) => b.durationMs - a.durationMs)
    .slice(0, SLOWEST)
    .map((file) => `| \`${file.file.replace(/^test\//, '')}\` | ${file.project} | ${seconds(file.durationMs)} |`);
  const failed = report.files.filter((file) => !file.passed).length;
  return [
    `**${report.files.length} files, ${tests} tests**; the run of ${report.commit === undefined ? '' : `${report.commit} on `}${report.startedAt.slice(0, 16).replace('T', ' ')} UTC took ${minutes(report.wallMs)} in Vitest${failed > 0 ? ` (${failed} ${failed === 1 ? 'file' : 'files'} failed)` : ''}.`,
    '',
    '| project | files | tests | time in its files (tests and hooks) |',
    '|---|---|---|---|',
    ...rows,
    '',
    `The ${SLOWEST} slowest files (tests and hooks, imports not counted):`,
    '',
    '| file | project | time |',
    '|---|---|---|',
    ...slowest,
  ].join('\n');
}

/** Each file's time in seconds (tests, hooks and imports), by path: the order test/support/sequencer.ts starts them in. */
export function fileTimes(report: SuiteReport): Record<string, number> {
  const entries = report.files.map((file) => [file.file, Math.round((file.durationMs + file.importMs) / 100) / 10] as const);
  return Object.fromEntries(entries.sort(([a], [b]) => a.localeCompare(b)));
}

/** The doc with its block replaced; throws when the markers are missing. */
export function withBlock(doc: string, block: string): string {
  const start = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (start < 0 || end < start) throw new Error(`docs/testing.md lacks the markers ${BEGIN} … ${END}`);
  return `${doc.slice(0, start)}${BEGIN}\n${block}\n${doc.slice(end)}`;
}

function main(): void {
  const path = process.argv[2] ?? `${ROOT}${SUITE_REPORT}`;
  const report = JSON.parse(readFileSync(path, 'utf8')) as SuiteReport;
  const reported = new Set(report.files.map((file) => file.file));
  const missing = [...filesOnDisk().values()].flat().filter((file) => !reported.has(file));
  if (missing.length > 0) {
    console.error(
      `${path} is not of a whole run: ${missing.length} test files on disk are not in it (e.g. ${missing.slice(0, 3).join(', ')}); run npm test first`,
    );
    process.exit(1);
  }
  writeFileSync(TESTING_DOC, withBlock(readFileSync(TESTING_DOC, 'utf8'), renderBlock(report)));
  writeFileSync(`${ROOT}${FILE_TIMES}`, `${JSON.stringify(fileTimes(report), null, 2)}\n`);
  console.log(`docs/testing.md and ${FILE_TIMES}: ${report.files.length} files from ${path}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main();
