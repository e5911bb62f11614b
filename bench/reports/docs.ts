/** The run written into the docs: the generated part of docs/BENCHMARKS.md and the chart beside it. */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { BenchReport } from './bench-report.js';
import { renderSvg } from './chart.js';
import { replaceGenerated } from './generated-section.js';
import { renderMarkdown } from './markdown.js';

const BEGIN = '<!-- bench:generated:begin (written by npm run bench; edit outside these markers) -->';
const END = '<!-- bench:generated:end -->';

/** Replaces the generated part of BENCHMARKS.md (or appends one) and writes the chart next to it. */
export async function writeDocs(report: BenchReport, docsDir: string): Promise<{ markdown: string; svg: string }> {
  const markdownPath = join(docsDir, 'BENCHMARKS.md');
  const svgPath = join(docsDir, 'bench', 'chart.svg');
  await mkdir(dirname(svgPath), { recursive: true });
  await writeFile(svgPath, renderSvg(report));
  const existing = await readFile(markdownPath, 'utf8').catch(() => '# Benchmarks\n');
  const generated = `${BEGIN}\n\n![throughput and p99 per scenario](bench/chart.svg)\n\n${renderMarkdown(report)}\n\n${END}`;
  await writeFile(markdownPath, replaceGenerated(existing, BEGIN, END, generated));
  return { markdown: markdownPath, svg: svgPath };
}
