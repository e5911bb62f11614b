import { compiledServerEntry } from '../../bench/harness/compiled-server.js';

/**
 * Global setup of the load project: compiles the bench's server once for all its files (each
 * file's own process would otherwise compile it again) and hands it to them, and to the bench
 * processes they start, through the environment. The build is removed when the run exits.
 */
export default async function compileBenchServer(): Promise<void> {
  process.env.BENCH_SERVER_ENTRY = await compiledServerEntry();
}
