import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { openStore } from '../../../src/store/open-store.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { TestClock } from '../../support/harness.js';

const database = await createTestDatabase('postgres');

describe('PostgreSQL settings the service warns about at start', { skip: 'skip' in database && database.skip }, () => {
  after(() => (database as TestDatabase).drop());

  test('synchronous_commit off: one warning, and the store works all the same; on: none', async () => {
    const url = (database as TestDatabase).url;
    const off = openStore(`${url}?options=${encodeURIComponent('-c synchronous_commit=off')}`, { poolSize: 1, clock: new TestClock() });
    const on = openStore(url, { poolSize: 1, clock: new TestClock() });
    try {
      await off.migrate();
      const [warning, ...others] = await off.settingWarnings();
      assert.match(warning ?? '', /synchronous_commit is off: an acknowledged event can be lost if the database server crashes/);
      assert.deepEqual(others, []);
      assert.deepEqual(await on.settingWarnings(), []);
      const recorded = await off.record({ provider: 'stripe', eventId: 'evt_async', eventType: 't', payload: '{}', headers: {} });
      assert.equal(recorded.outcome, 'recorded');
    } finally {
      await off.close();
      await on.close();
    }
  });
});
