import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { flameGraphSvg, writeFlameGraphs } from '../flame-graph.js';
import { area, inclusiveByArea, summariseProfile, type CpuProfile } from '../profile-summary.js';

const frame = (id: number, functionName: string, children: number[] = [], url = 'file:///app/src/store/batch.js') => ({
  id,
  callFrame: { functionName, url, lineNumber: id },
  children,
});

/** main calls parse (60 ms) and write (30 ms); parse calls one that hardly ran; idle 100 ms, GC 10 ms. */
const PROFILE: CpuProfile = {
  nodes: [
    frame(1, '(root)', [2, 5, 6], ''),
    frame(2, 'main', [3, 4]),
    frame(3, 'parse', [7], 'file:///app/node_modules/fastify/lib/parse.js'),
    frame(4, 'write'),
    frame(5, '(idle)', [], ''),
    frame(6, '(garbage collector)', [], ''),
    frame(7, 'a<b>&c'),
  ],
  samples: [3, 4, 5, 6, 7],
  timeDeltas: [60_000, 30_000, 100_000, 10_000, 5],
};

interface Drawn {
  title: string;
  x: number;
  y: number;
  width: number;
}

function frames(svg: string): Drawn[] {
  return [...svg.matchAll(/<g><title>([^<]*)<\/title><rect x="([\d.]+)" y="(\d+)" width="([\d.]+)"/g)].map((m) => ({
    title: m[1]!,
    x: Number(m[2]),
    y: Number(m[3]),
    width: Number(m[4]),
  }));
}

const named = (drawn: Drawn[], name: string) => drawn.find((d) => d.title.startsWith(`${name} `) || d.title.startsWith(`${name}:`));

describe('flame graph of a CPU profile', () => {
  const svg = flameGraphSvg(PROFILE, 'receive-only <1>');
  const drawn = frames(svg);

  test('each frame is as wide as its share of busy time, idle left out', () => {
    assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg" width="1200"/);
    assert.match(svg, /busy CPU 0\.10 s \(idle left out\)/);
    assert.equal(named(drawn, '(idle)'), undefined);
    const busy = 100_005;
    assert.ok(Math.abs(named(drawn, 'all')!.width - 1200) < 0.01);
    assert.ok(Math.abs(named(drawn, 'parse')!.width - (60_005 / busy) * 1200) < 0.01);
    assert.ok(Math.abs(named(drawn, 'write')!.width - (30_000 / busy) * 1200) < 0.01);
    assert.ok(Math.abs(named(drawn, '(garbage collector)')!.width - (10_000 / busy) * 1200) < 0.01);
    assert.match(named(drawn, 'parse')!.title, /^parse node_modules\/fastify\/lib\/parse\.js:4: 60\.0 ms, 60\.00%$/);
  });

  test('callers sit below their callees, side by side in call order', () => {
    const [all, main, parse, write] = ['all', 'main', 'parse', 'write'].map((name) => named(drawn, name)!);
    assert.ok(all!.y > main!.y && main!.y > parse!.y);
    assert.equal(parse!.y, write!.y);
    assert.equal(parse!.x, main!.x);
    assert.ok(Math.abs(write!.x - (parse!.x + parse!.width)) < 0.02);
  });

  test('frames too narrow to see are left out, and names are escaped', () => {
    assert.equal(drawn.filter((d) => d.title.includes('a&lt;b&gt;&amp;c')).length, 0, 'a 5 us frame is under half a pixel');
    const wide = flameGraphSvg({ ...PROFILE, timeDeltas: [60_000, 30_000, 100_000, 10_000, 50_000] }, 't');
    assert.ok(frames(wide).some((d) => d.title.startsWith('a&lt;b&gt;&amp;c ')));
    assert.ok(!wide.includes('a<b>'));
    assert.match(svg, />receive-only &lt;1&gt;</);
  });

  test('one colour per package or project folder', () => {
    const fill = (name: string) => new RegExp(`<title>${name} [^<]*</title><rect [^>]*fill="([^"]+)"`).exec(svg)![1];
    assert.equal(fill('main'), fill('write'));
    assert.notEqual(fill('main'), fill('parse'));
  });

  test('writes FILE.svg beside every FILE.cpuprofile under a folder', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wi-flame-'));
    try {
      mkdirSync(join(dir, 'background-1'));
      writeFileSync(join(dir, 'background-1', 'CPU.1.cpuprofile'), JSON.stringify(PROFILE));
      writeFileSync(join(dir, 'notes.txt'), 'not a profile');
      assert.deepEqual(writeFlameGraphs(dir), [join(dir, 'background-1', 'CPU.1.svg')]);
      assert.match(readFileSync(join(dir, 'background-1', 'CPU.1.svg'), 'utf8'), /background-1: CPU\.1\.cpuprofile/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('profile summary: busy time under each area', () => {
  test('counts a sample once for every area on its stack, idle left out', () => {
    const { busyMicros, areas } = inclusiveByArea(PROFILE);
    assert.equal(busyMicros, 100_005);
    // main (src/store) is under every busy sample but GC's; fastify only under parse and what parse called.
    assert.equal(areas.get('src/store'), 90_005);
    assert.equal(areas.get('fastify'), 60_005);
    assert.equal(areas.get('((garbage collector))'), 10_000);
    assert.equal(areas.get('((idle))'), undefined);
    assert.equal(area('file:///app/dist/store/claim.js', 'claimBatch'), 'dist/store', 'the compiled service, as the bench runs it');
    assert.match(summariseProfile(PROFILE), /busy time under each area[\s\S]*90\.0% {2}src\/store/);
  });
});
