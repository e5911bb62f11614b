/**
 * `saturateWithWrk`: the closed loop by wrk (Debian's `wrk`, C), for the sources that say how wrk
 * can send their requests (RequestSource.wrk). autocannon runs in this Node process: on two shared
 * cores it takes one of them, and an nginx worker answering in ~15 µs then idles between its
 * requests and pays a wake-up for every few of them, a cost that a saturated server does not pay
 * (docs/BENCHMARKS.md, "The sale at the edge"). wrk sends the same requests for a tenth of the
 * CPU, so both servers of a pair are measured saturated.
 *
 * Only for sources whose answers change nothing: wrk stops on SIGINT and drops the answers then in
 * flight (at most one per connection, which the server may still have served within the CPU
 * counted: at most `connections / requests` more CPU per answer, 0.6 % for 100 connections and
 * 16,000 answers).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PhaseResult, RequestSource, Ticker, WrkRequests } from './load-types.js';

const INSTALLER = new URL('../../scripts/debian-command.sh', import.meta.url).pathname;
let installed = false;

/** Debian's wrk, installed with apt-get when missing (scripts/debian-command.sh, as promtool is); its name on the PATH. */
export function ensureWrk(): string {
  if (!installed) execFileSync('bash', [INSTALLER, 'wrk', 'wrk'], { stdio: ['ignore', 'ignore', 'inherit'] });
  installed = true;
  return 'wrk';
}

/** What the script's done() prints after this marker: the run as JSON. */
const MARKER = 'HMDP-WRK-RESULT ';

interface WrkReport {
  requests: number;
  /** µs from wrk's start to its threads' end. */
  duration: number;
  errors: { connect: number; read: number; write: number; timeout: number };
  /** µs. */
  latency: { p50: number; p90: number; p99: number; max: number };
  /** Each distinct answer: its status, body and count. */
  answers: Array<{ status: number; body: string; count: number }>;
}

/** Closed loop by wrk for `durationSeconds` (stopped by SIGINT, so any fraction of a second). */
export async function saturateWithWrk(
  url: string,
  source: Pick<RequestSource, 'onResponse'>,
  requests: WrkRequests,
  options: { connections: number; durationSeconds: number; onTick?: Ticker },
): Promise<PhaseResult> {
  const wrk = ensureWrk();
  const folder = await mkdtemp(join(tmpdir(), 'hmdp-wrk-'));
  const started = performance.now();
  const ticker = options.onTick ? setInterval(() => options.onTick!((performance.now() - started) / 1000), 250) : undefined;
  try {
    const script = join(folder, 'requests.lua');
    await writeFile(script, wrkScript(requests));
    // One thread: wrk answers 100,000+ requests a second on one, and a second would take the core the server needs.
    const args = ['-t1', `-c${options.connections}`, `-d${Math.ceil(options.durationSeconds) + 60}s`, '--timeout', '30s', '-s', script, url];
    const report = await runUntil(wrk, args, options.durationSeconds * 1000);
    for (const { status, body, count } of report.answers) for (let i = 0; i < count; i++) source.onResponse?.(status, body);
    const seconds = report.duration / 1e6;
    const ms = (micros: number) => Math.round(micros / 10) / 100;
    return {
      mode: 'saturation',
      generator: 'wrk',
      connections: options.connections,
      durationSeconds: Math.round(seconds * 100) / 100,
      requests: report.requests,
      rps: Math.round(report.requests / seconds),
      latency: { p50: ms(report.latency.p50), p90: ms(report.latency.p90), p99: ms(report.latency.p99), max: ms(report.latency.max) },
      errors: report.errors.connect + report.errors.read + report.errors.write + report.errors.timeout,
      non2xx: report.answers.filter((answer) => answer.status < 200 || answer.status > 299).reduce((sum, answer) => sum + answer.count, 0),
    };
  } finally {
    clearInterval(ticker);
    await rm(folder, { recursive: true, force: true });
  }
}

/** Runs wrk, sends it SIGINT after `ms` (it then stops its threads and runs done()), and reads its report. */
async function runUntil(wrk: string, args: string[], ms: number): Promise<WrkReport> {
  const child = spawn(wrk, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  // 'close', not 'exit': the report is read only once wrk's output has all arrived.
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve(code));
  });
  const timer = setTimeout(() => child.kill('SIGINT'), ms);
  try {
    const code = await exited;
    const line = stdout.split('\n').find((text) => text.startsWith(MARKER));
    if (code !== 0 || line === undefined) throw new Error(`wrk ${args.join(' ')} exited with ${String(code)}: ${stderr.trim() || stdout.trim()}`);
    return JSON.parse(line.slice(MARKER.length)) as WrkReport;
  } finally {
    clearTimeout(timer);
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}

/**
 * The wrk script: request i sends the source's path with header set i mod n; every answer counted
 * by status and body in its thread (wrk reads a thread's globals), all printed by done() as JSON.
 */
export function wrkScript(requests: WrkRequests): string {
  const headerSets = requests.headerSets ?? [{}];
  if (headerSets.length === 0) throw new Error('wrk: headerSets is empty');
  const table = (headers: Record<string, string>) =>
    `{${Object.entries(headers)
      .map(([name, value]) => `[${luaString(name)}]=${luaString(value)}`)
      .join(',')}}`;
  return `-- Written by bench/harness/wrk.ts for one closed-loop phase.
local method, path = ${luaString(requests.method)}, ${luaString(requests.path)}
local header_sets = {
${headerSets.map((headers) => `  ${table(headers)},`).join('\n')}
}
local count = #header_sets
local threads = {}
local sent = 0
answers = {}

function setup(thread)
  threads[#threads + 1] = thread
end

function request()
  sent = sent + 1
  return wrk.format(method, path, header_sets[(sent - 1) % count + 1])
end

function response(status, headers, body)
  local key = status .. " " .. body
  answers[key] = (answers[key] or 0) + 1
end

-- JSON string: quotes, backslashes and control bytes escaped; other bytes as they are (the bodies are UTF-8).
local function json_string(text)
  return '"' .. text:gsub('[%c"\\\\]', function(c) return string.format("\\\\u%04x", c:byte()) end) .. '"'
end

function done(summary, latency)
  local listed = {}
  local merged = {}
  for _, thread in ipairs(threads) do
    for key, n in pairs(thread:get("answers")) do merged[key] = (merged[key] or 0) + n end
  end
  for key, n in pairs(merged) do
    local status, body = key:match("^(%d+) (.*)$")
    listed[#listed + 1] = string.format('{"status":%s,"body":%s,"count":%d}', status, json_string(body), n)
  end
  local e = summary.errors
  io.write(${luaString(MARKER)}, string.format(
    '{"requests":%d,"duration":%d,"errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d},"latency":{"p50":%d,"p90":%d,"p99":%d,"max":%d},"answers":[%s]}',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, table.concat(listed, ",")), "\\n")
end
`;
}

/** A Lua string literal of any text (decimal escapes for everything but plain printable ASCII). */
function luaString(text: string): string {
  let literal = '"';
  for (const byte of Buffer.from(text, 'utf8')) {
    literal += byte >= 0x20 && byte < 0x7f && byte !== 0x22 && byte !== 0x5c ? String.fromCharCode(byte) : `\\${byte}`;
  }
  return `${literal}"`;
}
