import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { systemClock } from '../../../src/clock.js';
import { PrometheusMetrics } from '../../../src/observability/prometheus.js';

/** docs/alerts.yml: valid Prometheus rules (promtool), on metrics the service exposes. */
const RULES = resolve(import.meta.dirname, '../../../docs/alerts.yml');

const promtool = await promisify(execFile)('promtool', ['--version']).then(
  () => null,
  (error: Error) => `promtool not found (${error.message}); install Debian's prometheus package`,
);
if (promtool && process.env.REQUIRE_SERVICES === '1') throw new Error(`${promtool} (REQUIRE_SERVICES=1)`);

test('promtool accepts docs/alerts.yml', { skip: promtool ?? false }, async () => {
  const { stdout } = await promisify(execFile)('promtool', ['check', 'rules', RULES]);
  assert.match(stdout, /SUCCESS: \d+ rules found/);
});

test('every metric the rules name is one the service exposes', async () => {
  const rules = await readFile(RULES, 'utf8');
  const named = new Set(rules.match(/webhook_inbox_[a-z_]+/g));
  assert.ok(named.size > 0);
  const metrics = new PrometheusMetrics({
    stats: () => Promise.resolve({ due: 0, oldestPendingAt: null, stuck: 0, failed: 0 }),
    outboxStats: () => Promise.resolve({ pending: 0, sending: 0, sent: 0, failed: 0, skipped: 0 }),
    clock: systemClock,
    logger: pino({ level: 'silent' }),
  });
  const { text } = await metrics.exposition();
  const exposed = new Set([...text.matchAll(/^# TYPE (\S+)/gm)].map((match) => match[1]));
  assert.deepEqual(
    [...named].filter((name) => !exposed.has(name)),
    [],
  );
});
