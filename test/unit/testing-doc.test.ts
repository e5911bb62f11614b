import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { TESTING_DOC, filesInDoc, filesOnDisk } from '../../scripts/testing-doc.js';

describe('docs/testing.md', () => {
  it('counts the test files on disk, project by project (the block npm run docs:testing writes)', () => {
    const inDoc = filesInDoc(readFileSync(TESTING_DOC, 'utf8'));
    const onDisk = new Map([...filesOnDisk()].map(([project, files]) => [project, files.length]));
    expect(
      Object.fromEntries(inDoc),
      'docs/testing.md counts other test files than are on disk: run the whole suite (npm test), then npm run docs:testing',
    ).toEqual(Object.fromEntries(onDisk));
  });
});
