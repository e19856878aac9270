// Preloaded into a bench target (`node --import ./bench/event-loop-probe.mjs`): on SIGUSR2 it appends
// the event-loop delay since the previous signal to $EVENT_LOOP_PROBE_FILE, as one JSON line, and
// starts over. The bench reads how long the service could not run anything while it was attacked.
import { appendFileSync } from 'node:fs';
import process from 'node:process';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const histogram = monitorEventLoopDelay({ resolution: 5 });
histogram.enable();
process.on('SIGUSR2', () => {
  const ms = (ns) => Math.round(ns / 1e4) / 100;
  appendFileSync(process.env.EVENT_LOOP_PROBE_FILE, `${JSON.stringify({ maxMs: ms(histogram.max), p99Ms: ms(histogram.percentile(99)), meanMs: ms(histogram.mean) })}\n`);
  histogram.reset();
});
