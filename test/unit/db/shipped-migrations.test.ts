import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { inboxMigrations } from '../../../src/db/migrations/index.js';
import { sqliteBackend } from '../../../src/db/sqlite/backend.js';

/**
 * A migration that has shipped has run on installations, which never run it again: its text never
 * changes, and a change is a new migration. src/db/migrations/shipped.json holds the SHA-256 of every
 * file whose text a shipped migration's statements come from: each migration's own file, and each
 * file of versioned SQL it imports (the record procedures and the whole-payload function, in their
 * database's folder, one file per version). An edit of an imported constant therefore fails here as
 * an edit of the migration itself does, and every file a listed file imports must be listed too,
 * except the building blocks every migration shares (SHARED_BUILDING_BLOCKS), whose meaning their own
 * tests hold. index.ts is not listed: it grows with each migration.
 */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const MIGRATIONS = 'src/db/migrations';
const SHIPPED_LIST = `${MIGRATIONS}/shipped.json`;
const INDEX = `${MIGRATIONS}/index.ts`;

/**
 * Imported by shipped files, not frozen: the column types each backend supplies and createTable
 * (every table's start), and which MariaDB release gets the batch procedure (server-version.ts and
 * its test in test/integration/store/group-commit.test.ts).
 */
const SHARED_BUILDING_BLOCKS = new Set(['src/db/column-types.ts', 'src/db/mysql/server-version.ts']);

const shipped = JSON.parse(readFileSync(join(ROOT, SHIPPED_LIST), 'utf8')) as Record<string, string>;

/** The file's SHA-256, of its text with LF line ends (a checkout with CRLF ones is the same text). */
function digest(path: string): string {
  return createHash('sha256')
    .update(readFileSync(join(ROOT, path), 'utf8').replaceAll('\r\n', '\n'))
    .digest('hex');
}

/** The repository paths of the files `path` imports by a relative specifier (`./x.js` is x.ts). */
function localImports(path: string): string[] {
  const text = readFileSync(join(ROOT, path), 'utf8');
  return [...text.matchAll(/\bfrom\s+'(\.{1,2}\/[^']+)'/g)].map((match) => posix.join(posix.dirname(path), match[1]!).replace(/\.js$/, '.ts'));
}

const migrationFiles = readdirSync(join(ROOT, MIGRATIONS))
  .filter((name) => name.endsWith('.ts') && `${MIGRATIONS}/${name}` !== INDEX)
  .sort()
  .map((name) => `${MIGRATIONS}/${name}`);

test('a shipped migration never changes: every file listed in shipped.json is there, with the text it shipped with', () => {
  for (const [path, hash] of Object.entries(shipped)) {
    assert.ok(
      existsSync(join(ROOT, path)),
      `${path} is gone, but a shipped migration runs from it: restore it (a migration that shipped never changes; add a new migration instead)`,
    );
    assert.equal(
      digest(path),
      hash,
      `${path} changed after it shipped: installations ran its old text and will not run it again. Restore it and add a new migration instead (new SQL goes in a new versioned file, as *-v1.ts are)`,
    );
  }
});

test('every migration file is listed in shipped.json, so that its text is held from the start', () => {
  for (const path of migrationFiles) {
    if (path in shipped) continue;
    assert.fail(`${path} is not in ${SHIPPED_LIST}: add the line "${path}": "${digest(path)}" to it (and list any versioned SQL file it imports the same way)`);
  }
});

test('every file a shipped file imports is listed too, or is a building block every migration shares', () => {
  for (const path of Object.keys(shipped)) {
    for (const imported of localImports(path)) {
      if (imported in shipped || SHARED_BUILDING_BLOCKS.has(imported)) continue;
      assert.fail(
        `${path} imports ${imported}, which ${SHIPPED_LIST} does not hold, so the migration's statements could change with it: list it there ("${imported}": "${digest(imported)}") if it is versioned SQL, else take the SQL from a versioned file`,
      );
    }
  }
});

test('the index runs every migration file, in name order, under its file name', () => {
  assert.deepEqual(
    Object.keys(inboxMigrations(sqliteBackend.columnTypes)),
    migrationFiles.map((path) => posix.basename(path, '.ts')),
  );
});
