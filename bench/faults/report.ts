/**
 * Fault runs as Markdown tables, one per scenario, and their place in the reliability pages: each
 * scenario's table goes between its own markers (in docs/RELIABILITY.md for the crash faults,
 * docs/reliability-gray.md for the gray ones, docs/reliability-controls.md for the sale controls,
 * docs/reliability-rabbitmq.md for the RabbitMQ path's, docs/reliability-buckets.md for a voucher over buckets), so a run of one scenario rewrites only its
 * table and the hand-written text around the markers stays.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { FaultRun } from './harness/index.js';

/** The pages that hold scenario tables; a scenario without markers yet is appended to the first. */
const DOCS = [
  '../../docs/RELIABILITY.md',
  '../../docs/reliability-gray.md',
  '../../docs/reliability-controls.md',
  '../../docs/reliability-rabbitmq.md',
  '../../docs/reliability-buckets.md',
].map((path) => fileURLToPath(new URL(path, import.meta.url)));

/** Column titles; figures without one are shown under their key. */
const LABELS: Record<string, string> = {
  requests: 'requests',
  accepted: 'accepted (success: true)',
  acceptedUnanswered: 'accepted, unanswered',
  inMysql: 'in MySQL',
  duplicates: 'duplicates',
  oversold: 'oversold',
  lost: 'lost',
  drainMs: 'drain ms',
  unanswered: 'no answer',
  killedAtSeconds: 'fault at s',
  pendingOnVictim: 'pending on the victim at the kill',
  takeOvers: 'taken over (XAUTOCLAIM)',
  takenOverMs: 'kill → all taken over ms',
  outageSeconds: 'outage s',
  acceptedDuringOutage: 'accepted during outage',
  non2xx: 'non-2xx',
  non2xxNamingMysql: 'non-2xx naming MySQL',
  workerFailures: 'worker failure log lines',
  workerFailuresPerSecond: 'failure lines / s / instance',
  connectAttempts: 'MySQL connects tried during outage',
  connectAttemptsPerSecond: 'connects / s / instance',
  backlogAtRestore: 'queued when MySQL returned',
  caughtUpMs: 'MySQL back → backlog written ms',
  restartSeconds: 'Redis down s',
  reloadMs: 'start + AOF load ms',
  p99Ms: 'p99 ms (worst instance)',
  driftBefore: 'drifted vouchers before repair',
  driftAfter: 'drift after repair',
  mysqlOnlyOrders: 'orders in MySQL, buyer missing in Redis',
  leaseMs: 'lease ms',
  pauseMs: 'pause ms',
  takeoverMs: 'pause → second holder locked ms',
  writesAccepted: 'fenced writes accepted',
  writesRejected: 'fenced writes rejected',
  staleToken: 'paused holder token',
  newToken: 'second holder token',
  finalValue: 'row value after both',
  replicaStoppedMs: 'replica stopped ms',
  failoverMs: 'failover ms',
  repairedAtFailover: 'repaired at failover',
  ackTimeouts: 'answered after a WAIT timeout',
  deadLetters: 'dead letters',
  faultSeconds: 'fault s',
  withinDeadlinePct: 'answered within deadline %',
  answered503: '503',
  other5xx: '5xx other than 503',
  p99BeforeMs: 'p99 before ms',
  p99DuringMs: 'p99 during ms',
  p99AfterMs: 'p99 after ms',
  recoverMs: 'fault end → normal ms',
  redisResets: 'Redis connections reset',
  mysqlResets: 'MySQL connections reset',
  redisKibPerSecondBefore: 'app → Redis / Redis → app KiB/s before',
  redisKibPerSecondDuring: 'KiB/s during',
  changesAtSeconds: 'pause / resume / top up / lower / end at s',
  totals: 'units offered after top up → lower',
  refusedPaused: 'refused "paused"',
  refusedSoldOut: 'refused "sold out"',
  refusedEnded: 'refused "ended"',
  changeMs: 'slowest change ms',
  heldAtKill: 'unacked on the victim just before the kill',
  writtenAfterFaultMs: 'kill → orders accepted before it in MySQL ms',
  duplicatesDropped: 'copies dropped by writers',
  publishesNotConfirmed: 'publishes not confirmed (sent again)',
  queuedInBrokerAtStop: 'ready in the queue at the stop',
  shutdownMs: 'SIGTERM → all nodes exited ms',
  bootMs: 'start → 3 nodes booted and joined ms',
  acceptedAfterKill: 'accepted after the kill',
  firstNodeMs: 'start → first node takes connections ms',
  brokerBackToWrittenMs: 'first node up → orders accepted before the start in MySQL ms',
  unexpectedAnswers: 'non-2xx answers',
  stock: 'stock',
  acceptedAfterSoldOut: 'accepted after a "sold out"',
  outcomeUnknown503: '503 "outcome unknown"',
  unaccounted: 'units missing from Redis (stock − buyers − held)',
  strandedUnits: 'units abandoned in takes',
  strandedTransfers: 'takes abandoned',
  acceptedWhilePending: 'accepted, first load',
  answered503WhilePending: '503 while units pending',
  soldOutWhilePending: '"sold out" while units pending',
  sweptMs: 'takes → swept back ms',
  givesAtKill: 'gives on the master at the kill',
  givesRolledBack: 'gives rolled back',
  givesLost: 'gives lost (units gone)',
};

const TITLES: Record<string, string> = {
  'kill-app': 'Fault 1: SIGKILL an app instance',
  'redis-failover': 'Fault 2: SIGKILL a Redis master',
  'redis-restart': 'Fault 3: restart Redis (AOF)',
  buckets: 'Buckets: one voucher over 3 masters, faults mid-sale',
  'mysql-outage': 'Fault 4: MySQL unreachable for 10 s',
  'lock-pause': 'Fault 5: a lock holder paused past its lease',
  'rabbitmq-writer-kill': 'Fault 6: an order writer SIGKILLed mid-batch (RabbitMQ)',
  'rabbitmq-outage': 'Fault 7: the RabbitMQ cluster stopped for 10 s',
  'rabbitmq-node-kill': 'Fault 8: SIGKILL the RabbitMQ node leading the order queue',
  'redis-stall': 'Gray 1: Redis stalled 20 s',
  'redis-latency': 'Gray 2: Redis latency 100 ± 50 ms for 20 s',
  'mysql-stall': 'Gray 3: MySQL stalled 20 s',
  'connection-reset': 'Gray 4: connections reset mid-sale',
  'bandwidth-limit': 'Gray 5: app ↔ Redis bandwidth limit',
  'sale-controls': 'Controls under load: pause, resume, top up, lower, end',
};

export function renderScenarioTable(runs: FaultRun[]): string {
  const keys = [...new Set(runs.flatMap((run) => Object.keys(run.figures)))];
  const header = `| run | setting | ${keys.map((key) => LABELS[key] ?? key).join(' | ')} | checks |`;
  const rule = `|${' --- |'.repeat(keys.length + 3)}`;
  const rows = runs.map((run, index) => {
    const failed = run.checks.filter((check) => !check.pass).map((check) => check.name);
    const cells = keys.map((key) => String(run.figures[key] ?? '–'));
    return `| ${index + 1} | ${run.variant} | ${cells.join(' | ')} | ${failed.length === 0 ? `all ${run.checks.length} pass` : `FAIL: ${failed.join(', ')}`} |`;
  });
  return [header, rule, ...rows].join('\n');
}

export function renderMarkdown(results: FaultRun[], commandLine: string): string {
  const sections = groupByScenario(results).map(([name, runs]) => `### ${TITLES[name] ?? name}\n\n${renderScenarioTable(runs)}`);
  return `${sections.join('\n\n')}\n\n(${commandLine}, ${new Date().toISOString().slice(0, 16)} UTC)\n`;
}

/** Replaces each run scenario's table between its markers in the reliability pages; returns the pages written. */
export async function writeReliabilityDoc(results: FaultRun[], commandLine: string): Promise<string> {
  const before = new Map<string, string>();
  for (const path of DOCS) before.set(path, await readFile(path, 'utf8'));
  const docs = new Map(before);
  for (const [name, runs] of groupByScenario(results)) {
    const begin = `<!-- faults:${name}:begin (written by npm run faults -- --write; edit outside these markers) -->`;
    const end = `<!-- faults:${name}:end -->`;
    const generated = `${begin}\n\n${renderScenarioTable(runs)}\n\n\`${commandLine}\`, ${new Date().toISOString().slice(0, 10)}\n\n${end}`;
    const path = DOCS.find((candidate) => docs.get(candidate)!.includes(begin)) ?? DOCS[0]!;
    const doc = docs.get(path)!;
    const start = doc.indexOf(begin);
    const stop = doc.indexOf(end);
    docs.set(
      path,
      start >= 0 && stop > start
        ? doc.slice(0, start) + generated + doc.slice(stop + end.length)
        : `${doc.trimEnd()}\n\n### ${TITLES[name] ?? name}\n\n${generated}\n`,
    );
  }
  const changed = [...docs].filter(([path, text]) => text !== before.get(path));
  for (const [path, text] of changed) await writeFile(path, text);
  return changed.map(([path]) => path).join(', ');
}

function groupByScenario(results: FaultRun[]): Array<[string, FaultRun[]]> {
  const groups = new Map<string, FaultRun[]>();
  for (const result of results) groups.set(result.scenario, [...(groups.get(result.scenario) ?? []), result]);
  return [...groups];
}
