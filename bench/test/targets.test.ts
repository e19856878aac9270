import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { backlogStores } from '../run.js';
import { ownOn, peerOf, peerOn, TARGETS } from '../targets.js';

/** PostgreSQL's targets are MariaDB's servers on a database of their own, read against their own server's peers. */
describe('bench targets on two database servers', () => {
  test('each pg- target is its MariaDB twin (same server, same mode) on PostgreSQL', () => {
    const pg = Object.values(TARGETS).filter((t) => t.store === 'postgres');
    assert.deepEqual(
      pg.map((t) => t.name),
      ['pg-baseline', 'pg-background', 'pg-receive-only', 'pg-naive'],
    );
    for (const target of pg) {
      const twin = TARGETS[target.name.slice('pg-'.length)]!;
      assert.equal(twin.store, 'mysql');
      assert.deepEqual({ ...target, name: twin.name, label: twin.label, store: twin.store }, twin, target.name);
      assert.notEqual(target.label, twin.label, `${target.name}: the report tells the rows apart`);
    }
  });

  test('ratios are read against the baseline and naive handler of the same server', () => {
    assert.equal(peerOf('pg-background', 'baseline'), 'pg-baseline');
    assert.equal(peerOf('pg-receive-only', 'baseline'), 'pg-baseline');
    assert.equal(peerOf('pg-background', 'naive'), 'pg-naive');
    assert.equal(peerOf('background', 'baseline'), 'baseline');
    assert.equal(peerOf('background', 'naive'), 'naive');
    // SQLite has no server of its own: quoted against MariaDB's baseline, as before.
    assert.equal(peerOf('sqlite', 'baseline'), 'baseline');
    assert.equal(peerOn('postgres', 'backlog-worker'), 'pg-backlog-worker');
    assert.equal(peerOn('mysql', 'receive-only'), 'receive-only');
    // SQLite's own steps: its receiver and the backlog's worker.
    assert.equal(ownOn('sqlite', 'receive-only'), 'sqlite-receive-only');
    assert.equal(ownOn('postgres', 'receive-only'), 'pg-receive-only');
    assert.equal(ownOn('mysql', 'backlog-worker'), 'backlog-worker');
  });

  test("the backlog step runs on the servers of the run's targets", () => {
    const settings = (targets: string[], capacityTargets: string[] = [], backlogEvents = 100) => ({ targets, capacityTargets, backlogEvents });
    assert.deepEqual(backlogStores(settings(['baseline', 'background'])), ['mysql']);
    assert.deepEqual(backlogStores(settings(['baseline', 'pg-baseline'])), ['mysql', 'postgres']);
    assert.deepEqual(backlogStores(settings(['baseline'], ['pg-naive'])), ['mysql', 'postgres']);
    assert.deepEqual(backlogStores(settings(['pg-baseline', 'pg-background'])), ['postgres']);
    assert.deepEqual(backlogStores(settings(['sqlite'])), ['sqlite']);
    assert.deepEqual(backlogStores(settings(['sqlite-receive-only', 'pg-baseline', 'naive'])), ['mysql', 'postgres', 'sqlite']);
    assert.deepEqual(backlogStores(settings(['pg-baseline'], [], 0)), []);
  });
});
