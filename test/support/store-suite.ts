import { after, before, describe } from 'node:test';
import { composeDomains } from '../../src/extension/compose-domains.js';
import type { PaymentDomain } from '../../src/extension/payment-domain.js';
import { openStore } from '../../src/store/open-store.js';
import type { KyselyInboxStore } from '../../src/store/kysely-store.js';
import { createTestDatabases, STORE_BACKENDS, type StoreBackendName, type TestDatabase } from './database.js';
import { Harness, TestClock, testConfig } from './harness.js';

/** What a suite over one store sees: set before its tests run. */
export interface StoreSuite {
  backend: StoreBackendName;
  database: TestDatabase;
  store: KyselyInboxStore;
  clock: TestClock;
  /** The migrations the suite's store applied to its fresh database. */
  migrated: string[];
}

/**
 * `describe(title (backend))` once per store backend, each on a database of its own with a migrated
 * store on a test clock; the store is closed and the database dropped after the suite. `domains`:
 * whose tables the store has besides the inbox's own (the course platform's, say).
 */
export async function describeEachStore(title: string, body: (suite: StoreSuite) => void): Promise<void>;
export async function describeEachStore(title: string, options: { domains: PaymentDomain[] }, body: (suite: StoreSuite) => void): Promise<void>;
export async function describeEachStore(
  title: string,
  ...[first, second]: [(suite: StoreSuite) => void] | [{ domains: PaymentDomain[] }, (suite: StoreSuite) => void]
): Promise<void> {
  const [options, body] = second === undefined ? [{ domains: [] }, first as (suite: StoreSuite) => void] : [first as { domains: PaymentDomain[] }, second];
  const databases = await createTestDatabases();
  for (const backend of STORE_BACKENDS) {
    const database = databases[backend];
    describe(`${title} (${backend})`, { skip: 'skip' in database && database.skip }, () => {
      const suite = { backend, clock: new TestClock() } as StoreSuite;
      before(async () => {
        suite.database = database as TestDatabase;
        const { migrations } = composeDomains(testConfig(suite.database.url), options.domains);
        suite.store = openStore(suite.database.url, { poolSize: 4, clock: suite.clock, migrations });
        suite.migrated = await suite.store.migrate();
      });
      after(async () => {
        await suite.store?.close();
        await suite.database?.drop();
      });
      body(suite);
    });
  }
}

/** What a suite over one store's running service sees: set before its tests run. */
export interface ServiceSuite {
  backend: StoreBackendName;
  database: TestDatabase;
  service: Harness;
}

/**
 * `describe(title (backend))` once per store backend, each with a service (webhook-inbox in process,
 * migrated, workers running) on a database of its own; the service is closed and the database dropped
 * after the suite. `env`: the service's environment beyond the tests' defaults.
 */
export async function describeEachService(title: string, env: Record<string, string>, body: (suite: ServiceSuite) => void): Promise<void> {
  const databases = await createTestDatabases();
  for (const backend of STORE_BACKENDS) {
    const database = databases[backend];
    describe(`${title} (${backend})`, { skip: 'skip' in database && database.skip }, () => {
      const suite = { backend } as ServiceSuite;
      before(async () => {
        suite.database = database as TestDatabase;
        suite.service = await Harness.start(suite.database.url, env);
      });
      after(async () => {
        await suite.service?.close();
        await suite.database?.drop();
      });
      body(suite);
    });
  }
}
