import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { escapeXml } from './chart.js';
import { area, selfTimes, shortUrl, type CpuProfile, type ProfileNode } from './profile-summary.js';

/**
 * A flame graph of a V8 .cpuprofile as plain SVG: each frame as wide as the CPU time spent in it and
 * in what it called, callers below callees. Idle time is left out, so widths are shares of busy time.
 * Frames of one package or project folder share a colour. Hovering a frame shows its full name, file
 * and time.
 */
const WIDTH = 1200;
const FRAME_HEIGHT = 16;
const FONT_SIZE = 11;
/** Frames narrower than this many pixels are not drawn (they would be unreadable slivers). */
const MIN_FRAME_WIDTH = 0.5;
const CHAR_WIDTH = FONT_SIZE * 0.6;
const TOP = 34;

interface Frame {
  node: ProfileNode;
  totalMicros: number;
  children: Frame[];
}

function frameTree(profile: CpuProfile): Frame {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = selfTimes(profile);
  const build = (node: ProfileNode): Frame => {
    const children = (node.children ?? []).map((id) => build(byId.get(id)!)).filter((child) => child.totalMicros > 0 && child.node.callFrame.functionName !== '(idle)');
    const totalMicros = (self.get(node.id) ?? 0) + children.reduce((sum, child) => sum + child.totalMicros, 0);
    return { node, totalMicros, children };
  };
  // The profile's root holds no samples of its own; its children are the threads' entry frames.
  return build(profile.nodes[0]!);
}

/** A warm colour that depends only on the frame's area, so one package keeps one colour across graphs. */
function colourOf(areaName: string): string {
  let hash = 0;
  for (const char of areaName) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return `hsl(${hash % 50}, ${70 + (hash % 20)}%, ${55 + ((hash >> 8) % 20)}%)`;
}

interface Placed {
  frame: Frame;
  x: number;
  width: number;
  level: number;
}

/** The frames wide enough to draw, each with its x and its level above the root. */
function place(root: Frame, scale: number): Placed[] {
  const placed: Placed[] = [];
  const visit = (frame: Frame, x: number, level: number) => {
    const width = frame.totalMicros * scale;
    if (width < MIN_FRAME_WIDTH) return;
    placed.push({ frame, x, width, level });
    let childX = x;
    for (const child of frame.children) {
      visit(child, childX, level + 1);
      childX += child.totalMicros * scale;
    }
  };
  visit(root, 0, 0);
  return placed;
}

export function flameGraphSvg(profile: CpuProfile, title: string): string {
  const root = frameTree(profile);
  const placed = place(root, root.totalMicros === 0 ? 0 : WIDTH / root.totalMicros);
  const depth = Math.max(0, ...placed.map((p) => p.level));
  const height = TOP + (depth + 1) * FRAME_HEIGHT + 4;
  const frames = placed.map(({ frame, x, width, level }) => {
    const { functionName, url, lineNumber } = frame.node.callFrame;
    const name = level === 0 ? 'all' : functionName || '(anonymous)';
    const where = url ? ` ${shortUrl(url)}:${lineNumber + 1}` : '';
    const share = (frame.totalMicros / root.totalMicros) * 100;
    const y = TOP + (depth - level) * FRAME_HEIGHT;
    const fits = Math.floor((width - 4) / CHAR_WIDTH);
    return (
      `<g><title>${escapeXml(`${name}${where}: ${(frame.totalMicros / 1000).toFixed(1)} ms, ${share.toFixed(2)}%`)}</title>` +
      `<rect x="${x.toFixed(2)}" y="${y}" width="${width.toFixed(2)}" height="${FRAME_HEIGHT - 1}" fill="${level === 0 ? '#ddd' : colourOf(area(url, functionName))}"/>` +
      (fits >= 3 ? `<text x="${(x + 2).toFixed(2)}" y="${y + FONT_SIZE}">${escapeXml(truncate(name, fits))}</text>` : '') +
      '</g>'
    );
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="monospace" font-size="${FONT_SIZE}">`,
    `<text x="${WIDTH / 2}" y="16" text-anchor="middle" font-size="13">${escapeXml(title)}</text>`,
    `<text x="${WIDTH / 2}" y="29" text-anchor="middle">busy CPU ${(root.totalMicros / 1e6).toFixed(2)} s (idle left out); hover a frame for its time</text>`,
    ...frames,
    '</svg>',
    '',
  ].join('\n');
}

function truncate(text: string, chars: number): string {
  return text.length <= chars ? text : `${text.slice(0, chars - 2)}..`;
}

/** Writes `<profile>.svg` beside every .cpuprofile under `dir` (one folder per target and repetition). */
export function writeFlameGraphs(dir: string): string[] {
  const written: string[] = [];
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.cpuprofile')) continue;
    const file = join(entry.parentPath, entry.name);
    const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
    const svg = `${file.slice(0, -'.cpuprofile'.length)}.svg`;
    writeFileSync(svg, flameGraphSvg(profile, `${entry.parentPath.split('/').pop()}: ${entry.name}`));
    written.push(svg);
  }
  return written;
}

if (process.argv[1] === import.meta.filename) {
  const [dir] = process.argv.slice(2);
  if (!dir) throw new Error('usage: flame-graph.ts DIR (writes FILE.svg beside each FILE.cpuprofile under DIR)');
  for (const svg of writeFlameGraphs(dir)) console.log(svg);
}
