/**
 * `npm run bench -- growth`'s door (docs/bench-growth.md): how the cost grows with what the app
 * holds, one section per file (memory.ts: sessions and buyers; sales.ts; connections.ts;
 * feed.ts), run by growth.ts, rendered by render.ts.
 */
export { GROWTH_USAGE, main } from './cli.js';
export { runGrowth } from './growth.js';
export { renderGrowth, renderGrowthSvg } from './render.js';
export type { GrowthReport } from './report.js';
