import { html, type SafeHtml } from './html.js';

export interface Series {
  name: string;
  colour: string;
  values: Array<number | null>;
}

const WIDTH = 560;
const HEIGHT = 200;
const PAD = { left: 44, right: 10, top: 10, bottom: 24 };

/** A line chart as SVG, drawn from numbers only (nothing a payload can reach). */
export function lineChart(title: string, unit: string, labels: string[], series: Series[]): SafeHtml {
  const all = series.flatMap((s) => s.values.filter((v): v is number => v !== null));
  const max = Math.max(1, ...all);
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const x = (i: number) => PAD.left + (labels.length <= 1 ? 0 : (i * plotW) / (labels.length - 1));
  const y = (v: number) => PAD.top + plotH - (v / max) * plotH;
  const lines = series.map((s) => {
    const points = s.values.flatMap((v, i) => (v === null ? [] : [`${x(i).toFixed(1)},${y(v).toFixed(1)}`])).join(' ');
    // A dot per value too: a lone value (one busy minute) has no line to draw.
    const dots = s.values.map((v, i) => (v === null ? '' : html`<circle cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="2" fill="${s.colour}" />`));
    return html`<polyline fill="none" stroke="${s.colour}" stroke-width="1.6" points="${points}"><title>${s.name}</title></polyline>${dots}`;
  });
  const ticks = [0, 0.5, 1].map(
    (f) =>
      html`<text x="${PAD.left - 4}" y="${y(max * f) + 4}" text-anchor="end" font-size="10" fill="#5b6475">${formatNumber(max * f)}</text
        ><line x1="${PAD.left}" x2="${WIDTH - PAD.right}" y1="${y(max * f)}" y2="${y(max * f)}" stroke="#e6e8ec" />`,
  );
  const every = Math.max(1, Math.ceil(labels.length / 6));
  const xLabels = labels.map((label, i) => (i % every === 0 ? html`<text x="${x(i)}" y="${HEIGHT - 6}" text-anchor="middle" font-size="10" fill="#5b6475">${label}</text>` : ''));
  return html`<div class="chart">
    <strong>${title}</strong>
    <span class="legend"
      >${series.map(
        (s) =>
          html`<span
            ><svg width="10" height="10" viewBox="0 0 10 10" role="img" aria-label="${s.name}"><rect width="10" height="10" fill="${s.colour}" /></svg> ${s.name}</span
          >`,
      )}</span
    >
    <svg class="plot" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${title} (${unit})">${ticks}${lines}${xLabels}</svg>
  </div>`;
}

function formatNumber(value: number): string {
  return value >= 100 ? String(Math.round(value)) : String(Math.round(value * 10) / 10);
}
