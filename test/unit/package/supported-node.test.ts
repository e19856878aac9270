import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { MINIMUM_NODE, unsupportedNode } from '../../../src/supported-node.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');

test('the version check asks for what package.json engines says', () => {
  const { engines } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
  assert.equal(engines.node, `>=${MINIMUM_NODE.replace(/\.0$/, '')}`);
});

test('older versions get one line naming both versions; the minimum and later ones pass', () => {
  for (const version of ['18.19.0', '20.11.1', '16.20.2', '20.0.0']) {
    const problem = unsupportedNode(version);
    assert.ok(problem, version);
    assert.ok(problem.includes(MINIMUM_NODE) && problem.includes(version) && !problem.includes('\n'), problem);
  }
  for (const version of ['20.12.0', '20.20.2', '21.0.0', '22.3.1', '24.0.0']) assert.equal(unsupportedNode(version), null, version);
});
