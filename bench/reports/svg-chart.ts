/**
 * Small bar-chart panels as one SVG, written by hand: no chart tool to download, and the figure
 * stays a readable text file in the repository.
 */

export interface Bar {
  label: string;
  value: number;
  /** Shown at the bar's end; default the value. */
  text?: string;
}

export interface Panel {
  title: string;
  bars: Bar[];
}

const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Panels two to a row, each with horizontal bars scaled to its own largest value. */
export function panelsSvg(title: string, footnote: string, panels: Panel[]): string {
  const panelWidth = 420;
  const labelWidth = 130;
  const barArea = panelWidth - labelWidth - 110;
  const rowHeight = 22;
  const panelHeights = panels.map((panel) => 34 + panel.bars.length * rowHeight + 12);
  const rows = Math.ceil(panels.length / 2);
  const rowHeights = Array.from({ length: rows }, (_, row) => Math.max(panelHeights[row * 2] ?? 0, panelHeights[row * 2 + 1] ?? 0));
  const width = panelWidth * 2 + 30;
  const height = 40 + rowHeights.reduce((a, b) => a + b, 0) + 30;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="12">`,
    '<rect width="100%" height="100%" fill="#fff"/>',
    `<text x="10" y="22" font-size="14" font-weight="bold">${escape(title)}</text>`,
  ];
  panels.forEach((panel, i) => {
    const row = Math.floor(i / 2);
    const x = 10 + (i % 2) * (panelWidth + 10);
    const y = 40 + rowHeights.slice(0, row).reduce((a, b) => a + b, 0);
    const max = Math.max(...panel.bars.map((bar) => (Number.isFinite(bar.value) ? bar.value : 0)), Number.MIN_VALUE);
    parts.push(`<text x="${x}" y="${y + 16}" font-weight="bold">${escape(panel.title)}</text>`);
    panel.bars.forEach((bar, j) => {
      const top = y + 28 + j * rowHeight;
      const length = Number.isFinite(bar.value) ? Math.max(1, (bar.value / max) * barArea) : 0;
      parts.push(
        `<text x="${x + labelWidth - 6}" y="${top + 13}" text-anchor="end">${escape(bar.label)}</text>`,
        `<rect x="${x + labelWidth}" y="${top + 2}" width="${length.toFixed(1)}" height="${rowHeight - 7}" fill="#1971c2"/>`,
        `<text x="${x + labelWidth + length + 4}" y="${top + 13}">${escape(bar.text ?? String(bar.value))}</text>`,
      );
    });
  });
  parts.push(`<text x="10" y="${height - 10}" fill="#555">${escape(footnote)}</text>`, '</svg>');
  return `${parts.join('\n')}\n`;
}
