/** The run's chart (docs/bench/chart.svg): throughput at saturation and p99 at the fixed rate, per HTTP scenario. */
import type { BenchReport } from './bench-report.js';
import { number } from './format.js';
import { httpRows } from './http-rows.js';

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
    const color = row.name.startsWith('seckill') ? '#d9480f' : row.name.startsWith('shop') ? '#1971c2' : row.name.startsWith('edge') ? '#2f9e44' : '#868e96';
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
