import { readFileSync } from 'node:fs';

/**
 * Summarises a V8 .cpuprofile (from `npm run bench -- --profile DIR`): self time by package or source
 * folder, and the hottest functions. Usage: node --import tsx bench/profile-summary.ts FILE [TOP]
 */
export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** node_modules/<package>, a project folder (src/store, or dist/store compiled), node internals, or a V8 pseudo-frame. */
export function area(url: string, name: string): string {
  if (url === '') return `(${name || 'native'})`;
  const nodeModule = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nodeModule) return nodeModule[1]!;
  if (url.startsWith('node:')) return url;
  const project = /\/(src|dist|bench|test)\/(.*)\/?[^/]*$/.exec(url);
  if (project) return `${project[1]}/${project[2]!.split('/').slice(0, -1).join('/') || '.'}`;
  return url;
}

/** A frame's file, from the package or project folder on (node_modules/fastify/..., src/store/...). */
export const shortUrl = (url: string) => url.replace(/^.*\/(node_modules|src|dist|bench|test)\//, '$1/');

/** Microseconds sampled in each node itself (not in what it called), by node id. */
export function selfTimes(profile: CpuProfile): Map<number, number> {
  const self = new Map<number, number>();
  profile.samples.forEach((id, index) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0)));
  return self;
}

/**
 * Busy time (idle left out) under each area: a sample counts for every area on its stack once, so a
 * caller's area includes what it called (kysely's includes the mysql2 calls made through it).
 */
export function inclusiveByArea(profile: CpuProfile): { busyMicros: number; areas: Map<string, number> } {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const areas = new Map<string, number>();
  let busyMicros = 0;
  for (const [id, micros] of selfTimes(profile)) {
    if (byId.get(id)!.callFrame.functionName === '(idle)') continue;
    busyMicros += micros;
    const onStack = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const { callFrame } = byId.get(at)!;
      onStack.add(area(callFrame.url, callFrame.functionName));
    }
    for (const name of onStack) areas.set(name, (areas.get(name) ?? 0) + micros);
  }
  return { busyMicros, areas };
}

export function summariseProfile(profile: CpuProfile, top = 25): string {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = selfTimes(profile);
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const areas = new Map<string, number>();
  const functions = new Map<string, number>();
  for (const [id, micros] of self) {
    const { callFrame } = byId.get(id)!;
    const where = area(callFrame.url, callFrame.functionName);
    areas.set(where, (areas.get(where) ?? 0) + micros);
    const name = `${callFrame.functionName || '(anonymous)'} ${shortUrl(callFrame.url)}:${callFrame.lineNumber + 1}`;
    functions.set(name, (functions.get(name) ?? 0) + micros);
  }
  const table = (entries: Map<string, number>) =>
    [...entries]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, micros]) => `${((micros / total) * 100).toFixed(1).padStart(5)}%  ${name}`)
      .join('\n');
  const inclusive = inclusiveByArea(profile);
  const busyTable = [...inclusive.areas]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, micros]) => `${((micros / inclusive.busyMicros) * 100).toFixed(1).padStart(5)}%  ${name}`)
    .join('\n');
  return `total sampled: ${(total / 1e6).toFixed(1)} s, busy ${(inclusive.busyMicros / 1e6).toFixed(1)} s\n\nself time by area:\n${table(areas)}\n\nhottest functions (self time):\n${table(functions)}\n\nbusy time under each area (what it called included):\n${busyTable}\n`;
}

if (process.argv[1] === import.meta.filename) {
  const [file, top] = process.argv.slice(2);
  if (!file) throw new Error('usage: profile-summary.ts FILE.cpuprofile [TOP]');
  process.stdout.write(summariseProfile(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, Number(top ?? 25)));
}
