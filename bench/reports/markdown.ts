/**
 * The run's results as one object, and its renderings: Markdown tables (printed, and written
 * into docs/BENCHMARKS.md between markers), an SVG chart of throughput and p99, and the targets.
 */
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { HttpResult } from '../scenarios/shop-hot.js';
import type { OpsRow } from '../micro/id.js';
import type { BenchOptions } from '../harness/options.js';
import type { ProfileSummary } from './profile.js';
import type { SeckillResult } from '../sale/checks.js';
import type { PhaseResult } from '../harness/measure.js';
import { CPU_PARTS, formatSpread, spreadOf, type Spread } from '../harness/cpu.js';

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  os: string;
  node: string;
  redis: string;
  mysql: string;
}

export interface Target {
  name: string;
  target: string;
  measured: string;
  /** null: shown, not judged (e.g. the p99 at another connection count than the target's). */
  met: boolean | null;
  /** "met", "missed by 43 %" (how far the median is from the aim, relative to the aim) or "not judged". */
  verdict: string;
  /** Ratios: median and range over the rounds of alternating slices. */
  spread?: Spread;
}

export interface BenchReport {
  startedAt: string;
  finishedAt: string;
  commandLine: string;
  machine: Machine;
  /** /proc/loadavg (1, 5, 15 min) at the start → at the end: above ~2, others competed for the two cores. */
  loadAverage: string;
  options: Omit<BenchOptions, 'commandLine'>;
  baseline?: HttpResult;
  seckill: SeckillResult[];
  shopHot?: { cached: HttpResult; bare: HttpResult };
  ids?: OpsRow[];
  locks?: OpsRow[];
  targets: Target[];
  /** CPU profiles (`--cpu-prof`), by the server they profiled: `baseline`, `seckill-async`, `shop-hot` (its process also serves the bare route). */
  profiles?: Record<string, ProfileSummary>;
  /** Every correctness check passed. */
  pass: boolean;
}

const number = (value: number) => value.toLocaleString('en-US');
const ratio = (value: number | undefined) => (value === undefined || !Number.isFinite(value) ? '–' : `${value.toFixed(2)}×`);

/** Per round r, `pick(a[r]) / pick(b[r])`: the two ran one right after the other, so drift hits both alike. */
export function pairedRatios(a: PhaseResult[], b: PhaseResult[], pick: (slice: PhaseResult) => number): Spread {
  return spreadOf(a.map((slice, round) => (b[round] ? pick(slice) / pick(b[round]) : Number.NaN)));
}

const rps = (slice: PhaseResult) => slice.rps;
const cpuTotal = (slice: PhaseResult) => slice.cpu?.total ?? Number.NaN;

/** A ratio target, judged on the median over rounds: `at least` (throughput) or `at most` (CPU per request). */
function ratioTarget(name: string, spread: Spread, aim: number, direction: 'at least' | 'at most'): Target {
  const median = spread.median;
  if (!Number.isFinite(median)) return { name, target: `${direction === 'at least' ? '≥' : '≤'} ${aim}×`, measured: '–', met: null, verdict: 'not measured' };
  const met = direction === 'at least' ? median >= aim : median <= aim;
  const missedBy = Math.abs(median - aim) / aim;
  return {
    name,
    target: `${direction === 'at least' ? '≥' : '≤'} ${aim}×`,
    measured: formatSpread(spread, 3, '×'),
    met,
    verdict: met ? 'met' : `missed by ${Math.round(missedBy * 100)} %`,
    spread,
  };
}

export function computeTargets(report: Pick<BenchReport, 'baseline' | 'seckill' | 'shopHot' | 'options'>): Target[] {
  const async = report.seckill.find((s) => s.strategy === 'async');
  const sync = report.seckill.find((s) => s.strategy === 'sync');
  const targets: Target[] = [];
  if (async && report.baseline) {
    const base = report.baseline.slices;
    // Issue 29's aims with decisions batched: the order within 0.8× the rate and 1.25× the serving
    // CPU (server + Redis + MariaDB) of the baseline's one EVALSHA per request.
    targets.push(ratioTarget('seckill-async / baseline, req/s', pairedRatios(async.slices, base, rps), 0.8, 'at least'));
    targets.push(ratioTarget('seckill-async / baseline, CPU µs per request', pairedRatios(async.slices, base, cpuTotal), 1.25, 'at most'));
  }
  if (async && sync) {
    targets.push(ratioTarget('seckill-async / seckill-sync, req/s', pairedRatios(async.slices, sync.slices, rps), 5, 'at least'));
    targets.push(ratioTarget('seckill-sync / seckill-async, CPU µs per request', pairedRatios(sync.slices, async.slices, cpuTotal), 5, 'at least'));
  }
  if (async) targets.push(p99Target(async.fixedRate, report.baseline?.matchedRate));
  if (report.shopHot) {
    const { cached, bare } = report.shopHot;
    targets.push(ratioTarget('shop-hot / its bare in-memory route, req/s', pairedRatios(cached.slices, bare.slices, rps), 0.95, 'at least'));
    // 0.95× the rate = at most 1/0.95 = 1.05× the CPU per request.
    targets.push(ratioTarget('shop-hot / its bare route, CPU µs per request', pairedRatios(cached.slices, bare.slices, cpuTotal), 1.05, 'at most'));
  }
  return targets;
}

/**
 * The order's p99 against the baseline's at the same offered rate over 1,000 connections (issue
 * 29: ≤ 1.5×): absolute p99s on two shared cores measure the machine more than the code.
 */
function p99Target(order: PhaseResult, baseline: PhaseResult | undefined): Target {
  const name = 'seckill-async p99 / baseline p99, same offered rate';
  const aim = 1.5;
  const at = `${number(order.offeredRate ?? 0)} req/s offered, ${order.connections} connections`;
  const sameRate = baseline !== undefined && baseline.offeredRate === order.offeredRate;
  if (!sameRate) return { name, target: `≤ ${aim}×`, measured: `${order.latency.p99} ms (${at}; no baseline at that rate)`, met: null, verdict: 'not judged' };
  const value = order.latency.p99 / baseline.latency.p99;
  // The target is stated at 1,000 connections; at any other count the figure is shown but not judged.
  const met = order.connections === 1000 ? value <= aim : null;
  const verdict = met === null ? 'not judged' : met ? 'met' : `missed by ${Math.round(((value - aim) / aim) * 100)} %`;
  return { name, target: `≤ ${aim}×`, measured: `${ratio(value)} (${order.latency.p99} / ${baseline.latency.p99} ms at ${at})`, met, verdict };
}

interface HttpRow {
  name: string;
  route: string;
  result: Pick<HttpResult, 'saturation' | 'fixedRate' | 'slices'>;
  versus?: { name: string; rps: number };
  correct?: boolean;
  /** Another fixed-rate phase of a scenario already listed: its saturation figures are that row's. */
  fixedRateOnly?: boolean;
}

function httpRows(report: BenchReport): HttpRow[] {
  const rows: HttpRow[] = [];
  const base = report.baseline;
  if (base) rows.push({ name: 'baseline', route: base.route, result: base });
  if (base?.matchedRate)
    rows.push({ name: "baseline at the order's rate", route: base.route, result: { ...base, fixedRate: base.matchedRate }, fixedRateOnly: true });
  for (const sale of report.seckill) {
    rows.push({
      name: sale.scenario,
      route: sale.strategy === 'semaphore' ? 'POST /bench/seckill-semaphore/{id}' : 'POST /api/voucher-order/seckill/{id}',
      result: sale,
      ...(base ? { versus: { name: 'baseline', rps: base.saturation.rps } } : {}),
      correct: sale.pass,
    });
  }
  if (report.shopHot) {
    const { cached, bare } = report.shopHot;
    rows.push({ name: 'shop-hot', route: cached.route, result: cached, versus: { name: 'bare route', rps: bare.saturation.rps } });
    rows.push({ name: 'shop-hot bare route', route: bare.route, result: bare });
  }
  return rows;
}

export function renderMarkdown(report: BenchReport): string {
  const { machine, options } = report;
  const out: string[] = [];
  out.push(
    `Run of ${report.startedAt.slice(0, 16).replace('T', ' ')} UTC, ${Math.round((Date.parse(report.finishedAt) - Date.parse(report.startedAt)) / 1000)} s: ` +
      `\`${report.commandLine}\``,
    '',
    `Machine: ${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGiB} GiB, ${machine.os}; Node ${machine.node}, Redis ${machine.redis}, ${machine.mysql}. ` +
      `Load generator, servers, Redis and MySQL all on this machine; load average ${report.loadAverage} (1, 5, 15 min; start → end).`,
    '',
    `Each HTTP scenario: ${options.durationSeconds} s closed loop at ${options.connections} connections (saturation), then ` +
      `${options.durationSeconds} s ${options.autocannonRate ? "of autocannon's rate mode (overallRate; see BENCHMARKS.md on its figures)" : 'open loop'} at a fixed offered rate (${options.rate === undefined ? `${Math.round(options.rateFraction * 100)} % of its saturation rate, at most ${number(options.maxRate)} req/s` : `${number(options.rate)} req/s`}) ` +
      `over up to ${number(options.latencyConnections)} connections, latency counted from each request's due time. ` +
      `Sales: ${number(options.users)} users, vouchers of stock ${number(options.stock)}.`,
    '',
  );

  const rows = httpRows(report);
  if (rows.length > 0) {
    out.push(
      '| scenario | route | req/s at saturation | ratio | offered req/s | p50 ms | p90 ms | p99 ms | max ms | server loop lag p99 ms | generator lag p99 ms | errors | non-2xx | checks |',
      '|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
    );
    for (const row of rows) {
      const { saturation: s, fixedRate: l } = row.result;
      const vs = row.versus ? `${ratio(s.rps / row.versus.rps)} ${row.versus.name}` : '–';
      const rate = row.fixedRateOnly ? '(above)' : number(s.rps);
      const checks = row.correct === undefined ? '–' : row.correct ? 'PASS' : '**FAIL**';
      out.push(
        `| ${row.name} | \`${row.route}\` | ${rate} | ${vs} | ${number(l.offeredRate ?? 0)} | ${l.latency.p50} | ${l.latency.p90} | ${l.latency.p99} | ${l.latency.max} | ${l.serverLagP99 ?? '–'} | ${l.generatorLagP99 ?? '–'} | ` +
          `${row.fixedRateOnly ? l.errors : s.errors + l.errors} | ${row.fixedRateOnly ? l.non2xx : s.non2xx + l.non2xx} | ${checks} |`,
      );
    }
    out.push('');
  }

  const cpuRows = rows.filter((row) => row.result.saturation.cpuSpread && !row.fixedRateOnly);
  if (cpuRows.length > 0) {
    out.push(
      'CPU µs per request at saturation, by process: median (lowest–highest) over the alternating slices; "serving" = server + Redis + MariaDB + broker (RabbitMQ, counted for the scenario whose orders pass through it):',
      '',
      `| scenario | req/s per slice | ${CPU_PARTS.join(' | ')} | serving |`,
      `|---|---:|${CPU_PARTS.map(() => '---:|').join('')}---:|`,
    );
    for (const row of cpuRows) {
      const cpu = row.result.saturation.cpuSpread!;
      const rates = spreadOf(row.result.slices.map((slice) => slice.rps));
      out.push(`| ${row.name} | ${formatSpread(rates)} | ${CPU_PARTS.map((part) => formatSpread(cpu[part])).join(' | ')} | ${formatSpread(cpu.total)} |`);
    }
    out.push('');
  }

  const worked = report.seckill.filter((sale) => sale.work);
  if (worked.length > 0) {
    out.push(
      'Per accepted order at saturation, over all slices (the order worker drained after each): Redis commands (INFO commandstats, ' +
        'commands run by scripts included) and script calls, the mean reserve batch (orders per reserve script call, from the ' +
        "server's `seckill_reserve_batch_size`; — when it has none), orders per MySQL transaction of the server's order worker, and CPU µs by process:",
      '',
      '| scenario | accepted orders | Redis commands | script calls | mean reserve batch | orders per worker write | server µs | Redis µs | MariaDB µs | broker µs | serving µs |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const sale of worked) {
      const work = sale.work!;
      const f = (value: number, digits = 3) => (Number.isFinite(value) ? Number(value.toPrecision(digits)).toLocaleString('en-US') : '–');
      const { server, redis, mariadb, broker, total } = work.cpuPerOrder;
      out.push(
        `| ${sale.scenario} | ${number(work.accepted)} | ${f(work.commandsPerOrder)} | ${f(work.scriptsPerOrder)} | ${work.meanReserveBatch === null ? '—' : f(work.meanReserveBatch)} | ` +
          `${work.ordersPerWorkerWrite === null ? '—' : f(work.ordersPerWorkerWrite)} | ` +
          `${f(server)} | ${f(redis)} | ${f(mariadb)} | ${f(broker)} | ${f(total)} |`,
      );
    }
    out.push('');
  }

  for (const sale of report.seckill) {
    const refused =
      Object.entries(sale.refused)
        .map(([why, n]) => `${number(n)} "${why.replace(/^200 /, '')}"`)
        .join(', ') || 'none';
    out.push(
      `**${sale.scenario}**: ${sale.vouchers} vouchers × ${number(sale.stockPerVoucher)} stock; ${number(sale.accepted)} orders accepted, refused: ${refused}; ` +
        `worker drained ${sale.strategy === 'async' ? `${number(sale.drainMs)} ms after the load` : '– (sync writes MySQL before answering)'}` +
        (sale.writeLag
          ? `; acceptance to MySQL commit, p50 ≤ ${number(sale.writeLag.p50)} ms, p99 ≤ ${number(sale.writeLag.p99)} ms over ${number(sale.writeLag.count)} orders (the lag histogram's bucket bounds).`
          : '.'),
      '',
      ...sale.checks.map((check) => `- ${check.pass ? 'PASS' : '**FAIL**'} ${check.name}: ${check.detail}`),
      '',
    );
  }

  const micro = [...(report.ids ?? []), ...(report.locks ?? [])];
  if (micro.length > 0) {
    out.push('| micro-benchmark | mode | ops/s | ratio |', '|---|---|---:|---|');
    for (const row of micro)
      out.push(`| ${row.name} | ${row.mode} | ${number(row.opsPerSecond)} | ${row.baseline ? `${ratio(row.ratio)} ${row.baseline}` : '–'} |`);
    out.push('');
  }

  if (report.targets.length > 0) {
    out.push(
      'Targets: ratios are the median (lowest–highest) over rounds of alternating slices.',
      '',
      '| target | aim | measured | verdict |',
      '|---|---|---|---|',
    );
    for (const t of report.targets) out.push(`| ${t.name} | ${t.target} | ${t.measured} | ${t.met === false ? `**${t.verdict}**` : t.verdict} |`);
    out.push('');
  }

  for (const [server, profile] of Object.entries(report.profiles ?? {})) out.push(renderProfile(server, profile), '');
  out.push(`Correctness: **${report.pass ? 'PASS' : 'FAIL'}**.`);
  return out.join('\n');
}

function renderProfile(server: string, profile: ProfileSummary): string {
  const lines = [
    `CPU profile of the ${server} server (\`node --cpu-prof\` over its whole life: ${number(profile.totalMs)} ms, of which ${number(profile.busyMs)} ms busy; ` +
      'the run names the .cpuprofile file: open it in Chrome DevTools for the call tree). Self time by area, as a share of the busy time, native code charged to the JavaScript that called it:',
    '',
    '| area | ms | % |',
    '|---|---:|---:|',
    ...profile.byArea.slice(0, 14).map((a) => `| ${a.name} | ${number(a.ms)} | ${a.percent} |`),
    '',
    'Top functions by self time:',
    '',
    '| function | ms | % |',
    '|---|---:|---:|',
    ...profile.topFunctions.map((f) => `| \`${f.name.replace(/\|/g, '\\|')}\` | ${number(f.ms)} | ${f.percent} |`),
  ];
  return lines.join('\n');
}

/** Horizontal bars, one row per HTTP scenario: throughput at saturation (left) and p99 at the fixed rate (right). */
export function renderSvg(report: BenchReport): string {
  const rows = httpRows(report).filter((row) => !row.fixedRateOnly);
  const rowHeight = 28;
  const top = 56;
  const labelWidth = 170;
  const panelWidth = 300;
  const gap = 70;
  const width = labelWidth + 2 * panelWidth + gap + 130; // room for the p99 labels
  const height = top + rows.length * rowHeight + 40;
  const maxRps = Math.max(1, ...rows.map((r) => r.result.saturation.rps));
  const maxP99 = Math.max(1, ...rows.map((r) => r.result.fixedRate.latency.p99));
  const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">${escape(`hmdp-ts benchmark, ${report.startedAt.slice(0, 10)}: ${report.machine.cpus} CPU(s), Node ${report.machine.node}`)}</text>`,
    `<text x="${labelWidth}" y="44" font-weight="bold">req/s at saturation (${report.options.connections} connections)</text>`,
    `<text x="${labelWidth + panelWidth + gap}" y="44" font-weight="bold">p99 ms at a fixed rate (≤ ${report.options.latencyConnections} connections)</text>`,
  ];
  rows.forEach((row, i) => {
    const y = top + i * rowHeight;
    const rpsWidth = Math.max(1, (row.result.saturation.rps / maxRps) * panelWidth);
    const p99Width = Math.max(1, (row.result.fixedRate.latency.p99 / maxP99) * panelWidth);
    const color = row.name.startsWith('seckill') ? '#d9480f' : row.name.startsWith('shop') ? '#1971c2' : '#868e96';
    parts.push(
      `<text x="${labelWidth - 8}" y="${y + 15}" text-anchor="end">${escape(row.name)}${row.correct === false ? ' (FAIL)' : ''}</text>`,
      `<rect x="${labelWidth}" y="${y + 3}" width="${rpsWidth.toFixed(1)}" height="${rowHeight - 10}" fill="${color}"/>`,
      `<text x="${labelWidth + rpsWidth + 4}" y="${y + 15}">${number(row.result.saturation.rps)}</text>`,
      `<rect x="${labelWidth + panelWidth + gap}" y="${y + 3}" width="${p99Width.toFixed(1)}" height="${rowHeight - 10}" fill="${color}" opacity="0.6"/>`,
      `<text x="${labelWidth + panelWidth + gap + p99Width + 4}" y="${y + 15}">${row.result.fixedRate.latency.p99} ms at ${number(row.result.fixedRate.offeredRate ?? 0)}/s</text>`,
    );
  });
  parts.push(
    `<text x="10" y="${height - 12}" fill="#555">${escape(`offered rate: ${report.options.rate === undefined ? `${Math.round(report.options.rateFraction * 100)} % of each scenario's saturation rate, at most ${report.options.maxRate} req/s` : `${report.options.rate} req/s`}; ${report.commandLine}`)}</text>`,
    '</svg>',
  );
  return `${parts.join('\n')}\n`;
}

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
  const start = existing.indexOf(BEGIN);
  const end = existing.indexOf(END);
  const next = start >= 0 && end > start ? existing.slice(0, start) + generated + existing.slice(end + END.length) : `${existing.trimEnd()}\n\n${generated}\n`;
  await writeFile(markdownPath, next);
  return { markdown: markdownPath, svg: svgPath };
}
