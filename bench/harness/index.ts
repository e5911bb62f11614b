/**
 * The harness's door: what every bench command shares. The options of `npm run bench`
 * (options.ts), the world a run lives in (world.ts: database, key prefix, users, vouchers), the
 * server processes it starts (processes.ts, compiled-server.ts), the load it drives (saturate.ts,
 * fixed-rate.ts, measure.ts) and what it counts beside the answers (cpu.ts, redis-work.ts,
 * machine.ts).
 */
export { compiledServerEntry, COMPILED_ROOT_PATTERN } from './compiled-server.js';
export {
  childPids,
  CPU_PARTS,
  cpuSpread,
  formatSpread,
  mariadbPid,
  processCpuMicros,
  processRssBytes,
  redisPid,
  spreadOf,
  startCpuCount,
  type CpuPerRequest,
  type CpuPids,
  type CpuSpread,
  type Spread,
} from './cpu.js';
export { fixedRate } from './fixed-rate.js';
export {
  repeatedRequest,
  type Latency,
  type PhaseResult,
  type RequestSource,
  type RequestTiming,
  type SentRequest,
  type Ticker,
  type WrkRequests,
} from './load-types.js';
export { describeMachine, loadAverage, type Machine } from './machine.js';
export { measureAll, type LoadTarget, type MeasureOptions, type Measurement } from './measure.js';
export { OptionsError, parseBenchOptions, SCENARIOS, USAGE, type BenchOptions, type ScenarioName } from './options.js';
export { BENCH_PURCHASE_TOKEN_KEYS, scrapeMetrics, serverEnvironment, startServer, stopProcess, type ServerOptions, type ServerProcess } from './processes.js';
export { parseCounter, startSliceWork, workPerOrder, type SliceWork, type WorkPerOrder } from './redis-work.js';
export { saturate } from './saturate.js';
export { ensureWrk, saturateWithWrk } from './wrk.js';
export { attachWorld, createOwnWorld, type BenchUser, type OwnWorldOptions, type World } from './world.js';
