import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const SRC = path.resolve(import.meta.dirname, '../../../src');

/**
 * Where courses may be named: the course platform itself, the command line and the list of the
 * domains its service runs (which wire it in), the simulator's demo data, and migrations, which stay
 * as they shipped.
 */
const ALLOWED = [/^course-platform\//, /^cli\//, /^service\/domains\.ts$/, /^ops\/simulator\//, /^db\/migrations\//];

test('the engine knows payments, not courses: no other src/ file mentions one', () => {
  const files = readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts'));
  assert.ok(files.length > 100, `${files.length} files under src/`);
  const mentioning = files.filter((file) => /course/i.test(readFileSync(path.join(SRC, file), 'utf8')) && !ALLOWED.some((allowed) => allowed.test(file.split(path.sep).join('/'))));
  assert.deepEqual(mentioning, []);
});
