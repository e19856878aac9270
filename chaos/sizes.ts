import type { ClusterOptions } from './cluster.js';
import type { ChaosOptions } from './run.js';

const CLUSTER: ClusterOptions = { store: 'mysql', receivers: 3, processingReceivers: 1, workers: 3, leaseSeconds: 2 };
const SIMULATOR = {
  concurrency: 16,
  timeoutMs: 5000,
  retryBaseMs: 100,
  retryMaxMs: 2000,
  redeliveryShare: 0.15,
  burstShare: 0.03,
  burstSize: 6,
};

/** Inside `npm test` (once per server store): every fault kind once, ~600 events over about a minute. */
export const SHORT_RUN: ChaosOptions = {
  seed: 8,
  payments: 250,
  cluster: { ...CLUSTER, receivers: 2, workers: 2 },
  simulator: { ...SIMULATOR, eventsPerSecond: 10 },
  faults: { gapMs: [200, 600], maxWaitMs: 3000, downMs: [100, 300], killShare: 0.7 },
  outageGraceMs: 3000,
  drainTimeoutMs: 60_000,
};

/** `npm run chaos [-- --store postgres]`: >= 20,000 events, >= 20 kills, several database and Redis faults. */
export const LONG_RUN: ChaosOptions = {
  ...SHORT_RUN,
  seed: 2026,
  payments: 8000,
  cluster: CLUSTER,
  // Below what 3 workers process on a busy 2-core machine, so that recovery times are not backlog.
  simulator: { ...SIMULATOR, eventsPerSecond: 25 },
  faults: { gapMs: [500, 2000], maxWaitMs: 4000, downMs: [200, 2000], killShare: 0.9 },
  drainTimeoutMs: 180_000,
};
