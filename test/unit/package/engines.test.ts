import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import semver from 'semver';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const read = (file: string) => JSON.parse(readFileSync(path.join(ROOT, file), 'utf8')) as unknown;

interface LockEntry {
  version?: string;
  dev?: boolean;
  engines?: { node?: string };
}

// Only what a production install gets: a development tool that asks for a newer Node (mailparser's
// html-to-text wants 20.19, and ships a CommonJS build that runs on 20.12) warns only while testing.
test('every package a production install gets admits the oldest Node that package.json admits (no EBADENGINE from npm ci)', () => {
  const { engines } = read('package.json') as { engines: { node: string } };
  const oldest = semver.minVersion(engines.node)!.version;
  const { packages } = read('package-lock.json') as { packages: Record<string, LockEntry> };
  const refusing = Object.entries(packages)
    .filter(([where, entry]) => where !== '' && entry.dev !== true && entry.engines?.node !== undefined && !semver.satisfies(oldest, entry.engines.node))
    .map(([where, entry]) => `${where}@${entry.version} requires node ${entry.engines!.node}`);
  assert.deepEqual(refusing, [], `Node ${oldest} (package.json engines ${engines.node})`);
});
