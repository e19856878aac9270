import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
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

describe('profile summary', () => {
  test('self time by area and by function, as shares of every sample', () => {
    const summary = summariseProfile(PROFILE);
    assert.match(summary, /^total sampled: 0\.2 s, busy 0\.1 s$/m);
    assert.match(summary, /self time by area:\n 50\.0% {2}\(\(idle\)\)\n 30\.0% {2}fastify\n/);
    assert.match(summary, /hottest functions \(self time\):[\s\S]*30\.0% {2}parse node_modules\/fastify\/lib\/parse\.js:4\n/);
    assert.match(summary, /15\.0% {2}write src\/store\/batch\.js:5\n/);
  });

  test('busy time under each area counts a sample once for every area on its stack, idle left out', () => {
    const { busyMicros, areas } = inclusiveByArea(PROFILE);
    assert.equal(busyMicros, 100_005);
    // main (src/store) is under every busy sample but GC's; fastify only under parse and what parse called.
    assert.equal(areas.get('src/store'), 90_005);
    assert.equal(areas.get('fastify'), 60_005);
    assert.equal(areas.get('((garbage collector))'), 10_000);
    assert.equal(areas.get('((idle))'), undefined);
    assert.match(summariseProfile(PROFILE), /busy time under each area[\s\S]*90\.0% {2}src\/store/);
  });

  test('an area is a package, a project folder (sources or compiled), a node internal or a V8 pseudo-frame', () => {
    assert.equal(area('file:///app/dist/store/claim.js', 'claimBatch'), 'dist/store', 'the compiled service, as the bench runs it');
    assert.equal(area('file:///app/node_modules/@fastify/cookie/plugin.js', 'parse'), '@fastify/cookie');
    assert.equal(area('node:internal/http', 'write'), 'node:internal/http');
    assert.equal(area('', '(program)'), '((program))');
  });
});
