import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { FILE_TIMES } from './suite-report.js';

/**
 * The order in which a group's files go to its workers. A group's wall time is shortest when its
 * longest files start first (a two-minute file started last is a two-minute tail on one worker):
 *
 * - projects in the order listed here: the few long files (the static checks, browser, topology)
 *   before the many short ones;
 * - within a project, the longest first by the times of the last whole run (`FILE_TIMES`, written
 *   by `npm run docs:testing`), so that a fresh clone, which has no Vitest cache, orders them too;
 *   a file not in it goes after those that are, in Vitest's own order;
 * - the benchmark harness first of all in its group: it saturates the machine on purpose, and
 *   beside it starts the longest load file, the RabbitMQ scenarios, whose cluster boots meanwhile
 *   and whose checks count orders rather than time answers (vitest.config.ts, the load project).
 */
const PROJECTS_LONGEST_FIRST = ['checks', 'system', 'integration', 'unit', 'load'];
const FIRST_OF_ITS_GROUP = 'test/system/bench/harness.test.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function readFileTimes(): Map<string, number> {
  try {
    return new Map(Object.entries(JSON.parse(readFileSync(`${ROOT}${FILE_TIMES}`, 'utf8')) as Record<string, number>));
  } catch {
    return new Map();
  }
}

export default class LongestProjectsFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const times = readFileTimes();
    const path = (spec: TestSpecification) => relative(ROOT, spec.moduleId);
    const rank = (spec: TestSpecification): number => {
      const index = PROJECTS_LONGEST_FIRST.indexOf(spec.project.name);
      return index === -1 ? PROJECTS_LONGEST_FIRST.length : index;
    };
    const first = (spec: TestSpecification) => (path(spec) === FIRST_OF_ITS_GROUP ? 0 : 1);
    const time = (spec: TestSpecification) => times.get(path(spec)) ?? -1;
    // Array.prototype.sort is stable: files without a time keep Vitest's order.
    return sorted.sort(
      (a, b) => a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder || first(a) - first(b) || rank(a) - rank(b) || time(b) - time(a),
    );
  }
}
