/**
 * The reports' door: the run of `npm run bench` as one object (bench-report.ts) and its
 * renderings (Markdown, the SVG chart, the targets, CPU profiles), written into the docs between
 * their markers (docs.ts); the progress line on stderr; bar-chart panels for `growth`.
 */
export type { BenchReport, Target } from './bench-report.js';
export { renderSvg } from './chart.js';
export { writeDocs } from './docs.js';
export { replaceGenerated } from './generated-section.js';
export { renderMarkdown } from './markdown.js';
export { summariseProfiles, type ProfileSummary } from './profile.js';
export { Progress } from './progress.js';
export { panelsSvg, type Panel } from './svg-chart.js';
export { computeTargets } from './targets.js';
