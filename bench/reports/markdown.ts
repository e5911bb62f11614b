/** The run's report as Markdown: printed, and written into docs/BENCHMARKS.md between its markers (docs.ts). */
import { CPU_PARTS, formatSpread, spreadOf } from '../harness/index.js';
import type { EdgeSaleResult, EdgeSaleScenario, HttpResult } from '../scenarios/index.js';
import type { BenchReport } from './bench-report.js';
import { number, ratio } from './format.js';
import { EDGE_SALE_PAIRS, httpRows } from './http-rows.js';
import type { ProfileSummary } from './profile.js';
import { pairedRatios, servingWithoutMariadb } from './targets.js';

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
  const byWrk = rows.filter((row) => row.result.saturation.generator === 'wrk' && !row.fixedRateOnly).map((row) => row.name);
  if (byWrk.length > 0) {
    out.push(
      `Saturation by wrk for ${byWrk.join(', ')}, whose answers change nothing (bench/harness/wrk.ts: autocannon, in Node, cannot saturate nginx on two cores); by autocannon for the rest. Each pair judged below ran on one generator.`,
      '',
    );
  }
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
    // nginx's column only in a run with an edge scenario: elsewhere it is 0 on every row.
    const withNginx = Boolean(report.edgeShop || report.edgeSale);
    const parts = withNginx ? CPU_PARTS : CPU_PARTS.filter((part) => part !== 'nginx');
    out.push(
      'CPU µs per request at saturation, by process: median (lowest–highest) over the alternating slices; "serving" = server + Redis + MariaDB + broker (RabbitMQ, counted for the scenario whose orders pass through it)' +
        (withNginx ? " + nginx (the edge's master and workers, counted for the edge's scenarios):" : ':'),
      '',
      `| scenario | req/s per slice | ${parts.join(' | ')} | serving |`,
      `|---|---:|${parts.map(() => '---:|').join('')}---:|`,
    );
    for (const row of cpuRows) {
      const cpu = row.result.saturation.cpuSpread!;
      const rates = spreadOf(row.result.slices.map((slice) => slice.rps));
      out.push(`| ${row.name} | ${formatSpread(rates)} | ${parts.map((part) => formatSpread(cpu[part])).join(' | ')} | ${formatSpread(cpu.total)} |`);
    }
    out.push('');
  }

  out.push(...shopLevels(report));
  out.push(...saleAtEdge(report));

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

/**
 * The shop read at each level side by side: serving CPU per request and how many times cheaper
 * than the app's near-cache read (shop-hot), paired per round of slices; empty without shop-hot
 * and another level.
 */
function shopLevels(report: BenchReport): string[] {
  const nearCache = report.shopHot?.cached;
  const levels: Array<[string, HttpResult | undefined, string]> = [
    ['shop-redis', report.shopRedis, "the app, its near cache off: Redis' record"],
    ['edge-shop-l1', report.edgeShop?.l1, "the edge's L1 (nginx shared dict)"],
    ['edge-shop-l2', report.edgeShop?.l2, "the edge's L2 (the app's Redis record, read by Lua)"],
  ];
  const measured = levels.filter((level): level is [string, HttpResult, string] => level[1] !== undefined);
  if (!nearCache || measured.length === 0) return [];
  const serving = (slice: { cpu?: { total: number } }) => slice.cpu?.total ?? Number.NaN;
  const passed = (name: string) => {
    const edge = name === 'edge-shop-l1' ? report.edgeShop?.l1 : name === 'edge-shop-l2' ? report.edgeShop?.l2 : undefined;
    return edge ? `${number(edge.reachedApp)} of ${number(edge.measuredRequests)}` : '–';
  };
  return [
    "The shop read by level (`GET /api/shop/{id}`): serving CPU µs per request at saturation, and how many times cheaper than the app's near-cache read (shop-hot's serving µs ÷ the level's, paired per round of slices), median (lowest–highest); \"reached the app\": the route's requests the app behind the edge answered over the run, of those measured:",
    '',
    '| scenario | answered by | req/s per slice | serving µs | cheaper than shop-hot | reached the app |',
    '|---|---|---:|---:|---:|---:|',
    `| shop-hot | the app's near cache | ${formatSpread(spreadOf(nearCache.slices.map((slice) => slice.rps)))} | ${formatSpread(nearCache.saturation.cpuSpread?.total ?? spreadOf([]))} | 1× | – |`,
    ...measured.map(
      ([name, result, by]) =>
        `| ${name} | ${by} | ${formatSpread(spreadOf(result.slices.map((slice) => slice.rps)))} | ${formatSpread(result.saturation.cpuSpread?.total ?? spreadOf([]))} | ` +
        `${formatSpread(pairedRatios(nearCache.slices, result.slices, serving), 3, '×')} | ${passed(name)} |`,
    ),
    '',
  ];
}

/** What answers each scenario of the sale through the edge. */
const SALE_AT_EDGE_BY: Record<EdgeSaleScenario, string> = {
  'app-sold-out': "the app: its sold-out memory, after the session's lookup",
  'edge-sold-out': "the edge's nginx: its view of the sale",
  'proxy-order': "the app, through the edge's nginx with its Lua off",
  'edge-order': "the app, through the edge's nginx with everything on",
};

/**
 * The sale through the edge, pair by pair: serving CPU per request at saturation with its parts,
 * each edge scenario against its pair (paired per round of slices), what reached the app, the checks.
 */
function saleAtEdge(report: BenchReport): string[] {
  const results = report.edgeSale ?? [];
  if (results.length === 0) return [];
  const cpu = (result: HttpResult, part: 'nginx' | 'server' | 'redis' | 'mariadb' | 'generator') =>
    formatSpread(result.saturation.cpuSpread?.[part] ?? spreadOf([]));
  // As its target reads: the sold-out refusal's "times cheaper" (the app's ÷ the edge's), the order's "times the proxy's".
  const versus = (result: EdgeSaleResult) => {
    const pair = results.find((other) => other.scenario === EDGE_SALE_PAIRS[result.scenario]);
    if (!pair) return '–';
    const cheaper = result.scenario === 'edge-sold-out';
    const ratios = cheaper ? pairedRatios(pair.slices, result.slices, servingWithoutMariadb) : pairedRatios(result.slices, pair.slices, servingWithoutMariadb);
    return `${formatSpread(ratios, 3, '×')} ${cheaper ? `cheaper than ${pair.scenario}` : pair.scenario}`;
  };
  const reached = ({ reachedApp, measuredRequests, scenario }: EdgeSaleResult) =>
    reachedApp === null
      ? '– (one app behind the pair)'
      : `${number(reachedApp)} of ${number(measuredRequests)}` +
        (scenario === 'edge-sold-out' ? ` (${(Math.round((1000 * reachedApp) / measuredRequests) / 10).toLocaleString('en-US')} %)` : '');
  return [
    "The sale through the edge (`POST /api/voucher-order/seckill/{id}`, logged-in users, the order worker off): CPU µs per request at saturation, median (lowest–highest) over the slices, of app + Redis + nginx (MariaDB left out: these requests touch no MySQL, its CPU meanwhile is others' work; shown apart) and of each, beside the load generator's (bench/harness/wrk.ts: wrk saturates the sold-out pair, whose answers change nothing, since autocannon in Node cannot saturate nginx on two cores); each edge scenario against its pair as its target reads (how many times cheaper the edge's refusal is; the edge's order in times the proxy's), paired per round of slices; \"reached the app\": the order route's requests the app answered over the run, of those measured:",
    '',
    '| scenario | answered by | req/s per slice | app + Redis + nginx µs | nginx µs | app µs | Redis µs | (MariaDB µs) | load generator µs | against its pair | reached the app |',
    '|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|',
    ...results.map(
      (result) =>
        `| ${result.scenario} | ${SALE_AT_EDGE_BY[result.scenario]} | ${formatSpread(spreadOf(result.slices.map((slice) => slice.rps)))} | ` +
        `${formatSpread(spreadOf(result.slices.map(servingWithoutMariadb)))} | ${cpu(result, 'nginx')} | ${cpu(result, 'server')} | ${cpu(result, 'redis')} | ${cpu(result, 'mariadb')} | ` +
        `${result.saturation.generator ?? 'autocannon'} ${cpu(result, 'generator')} | ${versus(result)} | ${reached(result)} |`,
    ),
    '',
    ...results.flatMap((result) => result.checks.map((check) => `- ${result.scenario}: ${check.pass ? 'PASS' : '**FAIL**'} ${check.name}: ${check.detail}`)),
    '',
  ];
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
