import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, relative } from 'node:path';
import type { Reporter, TestModule, Vitest } from 'vitest/node';

/** Where each run writes its report; `npm run docs:testing` reads it (scripts/testing-doc.ts). */
export const SUITE_REPORT = 'test-results/suite-report.json';
/** Seconds each file took in the last whole run, by path from the repository (committed; sequencer.ts orders by it). */
export const FILE_TIMES = 'test/support/file-times.json';

export interface SuiteReport {
  /** ISO time the run started. */
  startedAt: string;
  /** The commit checked out (short hash; a `+` when the tree had changes), if git could tell. */
  commit?: string;
  /** Vitest's wall time, from its start to its last file's end. */
  wallMs: number;
  files: Array<{
    /** Relative to the repository, e.g. `test/unit/layout.test.ts`. */
    file: string;
    project: string;
    tests: number;
    passed: boolean;
    /** The file's tests and hooks (its beforeAll's servers included), as Vitest's summary line shows it. */
    durationMs: number;
    /** Importing the file and what it imports. */
    importMs: number;
    /** When the file was queued to a worker and when it ended, in ms from the run's start: where it sat in its group. */
    queuedAtMs?: number;
    endedAtMs?: number;
  }>;
}

/**
 * A reporter beside Vitest's own: each file's time with its hooks (Vitest's JSON report counts from
 * the first test's start to the last one's end, leaving out a beforeAll that starts a cluster),
 * its project and its test count, written to test-results/suite-report.json.
 */
export default class SuiteReporter implements Reporter {
  private started = 0;
  private root = '';
  private readonly queuedAt = new Map<string, number>();
  private readonly endedAt = new Map<string, number>();

  onInit(vitest: Vitest): void {
    this.started = Date.now();
    this.root = vitest.config.root;
  }

  onTestModuleQueued(module: TestModule): void {
    this.queuedAt.set(module.moduleId, Date.now() - this.started);
  }

  onTestModuleEnd(module: TestModule): void {
    this.endedAt.set(module.moduleId, Date.now() - this.started);
  }

  onTestRunEnd(testModules: readonly TestModule[]): void {
    const report: SuiteReport = {
      startedAt: new Date(this.started).toISOString(),
      ...commitOf(this.root),
      wallMs: Date.now() - this.started,
      files: testModules.map((module) => {
        const diagnostic = module.diagnostic();
        return {
          file: relative(this.root, module.moduleId),
          project: module.project.name,
          tests: [...module.children.allTests()].length,
          passed: module.ok(),
          durationMs: Math.round(diagnostic.duration),
          importMs: Math.round(diagnostic.collectDuration),
          queuedAtMs: this.queuedAt.get(module.moduleId),
          endedAtMs: this.endedAt.get(module.moduleId),
        };
      }),
    };
    const path = `${this.root}/${SUITE_REPORT}`;
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, `${JSON.stringify(report, null, 1)}\n`);
  }
}

function commitOf(root: string): { commit?: string } {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
    return { commit: `${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain') === '' ? '' : '+'}` };
  } catch {
    return {};
  }
}
