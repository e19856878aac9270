import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FAULT_KINDS } from '../../chaos/faults.js';
import { runChaos } from '../../chaos/run.js';
import { SHORT_RUN } from '../../chaos/sizes.js';
import { SERVER_BACKENDS, STORE_NAMES } from '../support/services.js';

/**
 * The chaos suite at small scale, on each server store: every fault kind at least once against a
 * private cluster, then every invariant at zero violations. `npm run chaos` is the long run.
 */
for (const store of SERVER_BACKENDS) {
  test(`short chaos run on ${STORE_NAMES[store]}: every fault kind, nothing lost, nothing doubled`, { timeout: 240_000 }, async (t) => {
    const report = await runChaos({ ...SHORT_RUN, cluster: { ...SHORT_RUN.cluster, store } });
    if ('skip' in report) return t.skip(report.skip);
    t.diagnostic(
      `${report.events.sent} events, ${report.deliveries.total} deliveries (${report.deliveries.answeredDuplicate} duplicates), ${report.faults.total} faults, ${report.durationSeconds} s, processed by ${JSON.stringify(report.processedBy)}`,
    );

    for (const invariant of report.invariants) {
      assert.equal(invariant.violations, 0, `${invariant.name}: ${invariant.violations} of ${invariant.checked}\n${invariant.examples.join('\n')}`);
      assert.ok(invariant.checked > 0, `${invariant.name} checked something`);
    }
    assert.deepEqual(report.unexpectedExits, []);
    assert.deepEqual(report.startFailures, [], 'every restarted process came up');
    for (const kind of FAULT_KINDS) assert.ok((report.faults.byKind[kind] ?? 0) >= 1, `${kind} injected`);
    // The faults did what they are for: deliveries failed and were retried, duplicates were answered
    // as such, events were taken over, and a late commit was refused by fencing.
    assert.ok(report.deliveries.retries > 0 && report.deliveries.answeredDuplicate > 0 && report.deliveries.burstCopies > 0);
    assert.ok((report.deliveries.byStatus['503'] ?? 0) > 0, 'the database outages were seen as 503');
    assert.ok(report.takeovers.eventsWithSeveralAttempts > 0, 'events taken over after a lease expired');
    assert.ok(
      (report.processedBy.worker ?? 0) > 0 && (report.processedBy['receiver thread'] ?? 0) > 0,
      `both workers and a receiver's thread processed: ${JSON.stringify(report.processedBy)}`,
    );
    assert.equal(report.processedBy.unknown, undefined, 'every processed event names a process of the cluster');
    const stall = report.faults.list.find((f) => f.kind === 'worker-stall');
    assert.ok(stall && (stall.fencedCommits ?? 0) >= 1, `the stalled worker's late commit was refused: ${JSON.stringify(stall)}`);
  });
}
