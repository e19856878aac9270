/** A line chart of latency percentiles against offered load, as plain SVG text (no chart library). */
export interface Series {
  label: string;
  /** Latency in ms per offered rate; null where nothing was acknowledged. */
  points: Array<{ rate: number; p50: number | null; p99: number | null; p99_9: number | null }>;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e'];
const PANELS = [
  ['p50', 'p50'],
  ['p99', 'p99'],
  ['p99_9', 'p99.9'],
] as const;
const PANEL = { width: 300, height: 220, left: 48, top: 28, right: 12, bottom: 40 };

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Log-scale y axis from the smallest to the largest power of ten around the data. */
function yScale(values: number[]): { ticks: number[]; y: (ms: number) => number } {
  const positive = values.filter((v) => v > 0);
  const low = Math.floor(Math.log10(Math.min(...positive, 1)));
  const high = Math.max(low + 1, Math.ceil(Math.log10(Math.max(...positive, 10))));
  const ticks = Array.from({ length: high - low + 1 }, (_, i) => 10 ** (low + i));
  const plot = PANEL.height - PANEL.top - PANEL.bottom;
  return { ticks, y: (ms) => PANEL.top + plot - ((Math.log10(Math.max(ms, 10 ** low)) - low) / (high - low)) * plot };
}

export function latencyChart(series: Series[], title: string): string {
  const rates = [...new Set(series.flatMap((s) => s.points.map((p) => p.rate)))].sort((a, b) => a - b);
  const values = series.flatMap((s) => s.points.flatMap((p) => [p.p50, p.p99, p.p99_9])).filter((v): v is number => v !== null);
  const { ticks, y } = yScale(values);
  const plotWidth = PANEL.width - PANEL.left - PANEL.right;
  const x = (rate: number) => PANEL.left + (rates.length === 1 ? plotWidth / 2 : (rates.indexOf(rate) / (rates.length - 1)) * plotWidth);
  const width = PANEL.width * PANELS.length;
  const legendHeight = 18 * series.length + 10;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${PANEL.height + legendHeight + 24}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${width / 2}" y="16" text-anchor="middle" font-size="13">${escapeXml(title)}</text>`,
  ];
  PANELS.forEach(([key, name], index) => {
    parts.push(`<g transform="translate(${index * PANEL.width},10)">`);
    parts.push(`<text x="${PANEL.left + plotWidth / 2}" y="${PANEL.top - 8}" text-anchor="middle" font-weight="bold">${name} latency (ms, log)</text>`);
    for (const tick of ticks) {
      parts.push(`<line x1="${PANEL.left}" x2="${PANEL.left + plotWidth}" y1="${y(tick)}" y2="${y(tick)}" stroke="#ddd"/>`);
      parts.push(`<text x="${PANEL.left - 4}" y="${y(tick) + 4}" text-anchor="end">${tick}</text>`);
    }
    for (const rate of rates) {
      parts.push(`<text x="${x(rate)}" y="${PANEL.height - PANEL.bottom + 14}" text-anchor="middle">${rate}</text>`);
    }
    parts.push(`<text x="${PANEL.left + plotWidth / 2}" y="${PANEL.height - PANEL.bottom + 30}" text-anchor="middle">offered load (deliveries/s)</text>`);
    series.forEach((s, i) => {
      const points = s.points.filter((p) => p[key] !== null).map((p) => `${x(p.rate).toFixed(1)},${y(p[key]!).toFixed(1)}`);
      if (points.length > 1) parts.push(`<polyline fill="none" stroke="${COLORS[i % COLORS.length]}" stroke-width="2" points="${points.join(' ')}"/>`);
      for (const point of points) {
        const [px, py] = point.split(',');
        parts.push(`<circle cx="${px}" cy="${py}" r="3" fill="${COLORS[i % COLORS.length]}"/>`);
      }
    });
    parts.push('</g>');
  });
  series.forEach((s, i) => {
    const top = PANEL.height + 24 + i * 18;
    parts.push(`<rect x="${PANEL.left}" y="${top - 9}" width="14" height="4" fill="${COLORS[i % COLORS.length]}"/>`);
    parts.push(`<text x="${PANEL.left + 20}" y="${top - 4}">${escapeXml(s.label)}</text>`);
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
