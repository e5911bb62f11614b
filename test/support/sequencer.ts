import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Vitest's own order within a group runs projects one after the other, by name, and feeds the
 * files to the workers in that order. A group's wall time is shortest when its longest files start
 * first (a two-minute file started last is a two-minute tail on one worker), so the projects of a
 * group go in the order listed here: the few long files (browser, topology, the static checks)
 * before the many short ones. Within a project Vitest's order stays (earlier failures first, then
 * the longest by its last run, or the largest file on a fresh clone).
 */
const PROJECTS_LONGEST_FIRST = ['system', 'checks', 'integration', 'unit', 'load'];

const rank = (spec: TestSpecification): number => {
  const index = PROJECTS_LONGEST_FIRST.indexOf(spec.project.name);
  return index === -1 ? PROJECTS_LONGEST_FIRST.length : index;
};

export default class LongestProjectsFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    // Array.prototype.sort is stable: files of one project keep Vitest's order.
    return sorted.sort((a, b) => a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder || rank(a) - rank(b));
  }
}
