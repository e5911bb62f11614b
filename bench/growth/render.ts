/** The growth report as Markdown and as bar-chart panels, written into docs/bench-growth.md and docs/bench/growth.svg. */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { formatSpread } from '../harness/index.js';
import { panelsSvg, replaceGenerated, type Panel } from '../reports/index.js';
import type { GrowthReport } from './report.js';

const n = (value: number) => value.toLocaleString('en-US');

export function renderGrowth(report: GrowthReport): string {
  const out: string[] = [
    `Run of ${report.startedAt.slice(0, 16).replace('T', ' ')} UTC: \`${report.commandLine}\`; load average ${report.loadAverage} (1, 5, 15 min; start → end).`,
    '',
  ];
  if (report.sessions) {
    out.push('| sessions | Redis bytes per session |', '|---:|---:|', ...report.sessions.map((row) => `| ${n(row.count)} | ${n(row.bytesPerItem)} |`), '');
  }
  if (report.buyers) {
    out.push(
      '| buyers of one voucher | bytes per buyer, order queued for the worker | bytes per buyer once written |',
      '|---:|---:|---:|',
      ...report.buyers.map((row) => `| ${n(row.count)} | ${n(row.bytesPerQueuedOrder)} | ${n(row.bytesPerItem)} |`),
      '',
    );
  }
  if (report.sales) {
    out.push(
      'Orders (every request a new order) at 100 connections; median (lowest–highest) of 3 alternating slices:',
      '',
      '| sales open | orders/s | server µs/order | Redis µs/order | MariaDB µs/order | serving µs/order |',
      '|---:|---:|---:|---:|---:|---:|',
      ...report.sales.map(
        (row) =>
          `| ${n(row.sales)} | ${formatSpread(row.rps)} | ${formatSpread(row.cpu.server)} | ${formatSpread(row.cpu.redis)} | ${formatSpread(row.cpu.mariadb)} | ${formatSpread(row.cpu.total)} |`,
      ),
      '',
    );
  }
  if (report.connections) {
    out.push(
      '| connections | offered req/s | p50 ms | p99 ms | server memory per connection |',
      '|---:|---:|---:|---:|---:|',
      ...report.connections.map(
        (row) => `| ${n(row.connections)} | ${n(row.offeredRate)} | ${row.p50} | ${row.p99} | ${n(Math.round(row.serverBytesPerConnection / 1024))} KiB |`,
      ),
      '',
    );
  }
  if (report.feed) {
    out.push(
      '| followers | ms to publish a blog (median, lowest–highest of 3) |',
      '|---:|---:|',
      ...report.feed.map((row) => `| ${n(row.followers)} | ${formatSpread(row.ms)} |`),
      '',
    );
  }
  return out.join('\n');
}

export function renderGrowthSvg(report: GrowthReport): string {
  const panels: Panel[] = [];
  if (report.sessions)
    panels.push({
      title: 'Redis bytes per session',
      bars: report.sessions.map((row) => ({ label: `${n(row.count)} sessions`, value: row.bytesPerItem, text: n(row.bytesPerItem) })),
    });
  if (report.buyers)
    panels.push({
      title: 'Redis bytes per buyer of one voucher (written / queued)',
      bars: report.buyers.flatMap((row) => [
        { label: `${n(row.count)} written`, value: row.bytesPerItem, text: n(row.bytesPerItem) },
        { label: `${n(row.count)} queued`, value: row.bytesPerQueuedOrder, text: n(row.bytesPerQueuedOrder) },
      ]),
    });
  if (report.sales) {
    panels.push({
      title: 'orders/s by sales open at once',
      bars: report.sales.map((row) => ({ label: `${n(row.sales)} sales`, value: row.rps.median, text: n(row.rps.median) })),
    });
    panels.push({
      title: 'CPU µs per order (server + Redis + MariaDB)',
      bars: report.sales.map((row) => ({ label: `${n(row.sales)} sales`, value: row.cpu.total.median, text: formatSpread(row.cpu.total) })),
    });
  }
  if (report.connections) {
    panels.push({
      title: 'p99 ms by open connections',
      bars: report.connections.map((row) => ({ label: `${n(row.connections)} conns`, value: row.p99, text: `${row.p99} ms` })),
    });
    panels.push({
      title: 'server KiB per connection',
      bars: report.connections.map((row) => ({
        label: `${n(row.connections)} conns`,
        value: row.serverBytesPerConnection / 1024,
        text: (row.serverBytesPerConnection / 1024).toFixed(1),
      })),
    });
  }
  if (report.feed)
    panels.push({
      title: 'ms to publish a blog by followers',
      bars: report.feed.map((row) => ({ label: n(row.followers), value: row.ms.median, text: formatSpread(row.ms) })),
    });
  return panelsSvg(`hmdp-ts: how cost grows, ${report.startedAt.slice(0, 10)}`, `${report.commandLine}; load average ${report.loadAverage}`, panels);
}

const BEGIN = '<!-- growth:generated:begin (written by npm run bench -- growth; edit outside these markers) -->';
const END = '<!-- growth:generated:end -->';

export async function writeGrowthDocs(report: GrowthReport, docsDir: string): Promise<void> {
  const markdownPath = join(docsDir, 'bench-growth.md');
  const svgPath = join(docsDir, 'bench', 'growth.svg');
  await mkdir(dirname(svgPath), { recursive: true });
  await writeFile(svgPath, renderGrowthSvg(report));
  const existing = await readFile(markdownPath, 'utf8').catch(() => '# How cost grows\n');
  const generated = `${BEGIN}\n\n![how cost grows](bench/growth.svg)\n\n${renderGrowth(report)}\n${END}`;
  await writeFile(markdownPath, replaceGenerated(existing, BEGIN, END, generated));
}
