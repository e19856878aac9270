import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { toMarkdown } from './report.js';
import { runChaos } from './run.js';
import { LONG_RUN, SHORT_RUN } from './sizes.js';

/**
 * `npm run chaos [-- --payments N --rate N --seed N --short --out DIR]`: the long run; writes
 * chaos-report.json and chaos-report.md to chaos/results/ (or --out) and exits 1 on any violation.
 */
const { values } = parseArgs({
  options: {
    short: { type: 'boolean', default: false },
    payments: { type: 'string' },
    rate: { type: 'string' },
    seed: { type: 'string' },
    out: { type: 'string', default: path.join(import.meta.dirname, 'results') },
  },
});
const base = values.short ? SHORT_RUN : LONG_RUN;
const options = {
  ...base,
  seed: values.seed ? Number(values.seed) : base.seed,
  payments: values.payments ? Number(values.payments) : base.payments,
  simulator: { ...base.simulator, eventsPerSecond: values.rate ? Number(values.rate) : base.simulator.eventsPerSecond },
};

const report = await runChaos(options, (line) => console.log(line));
if ('skip' in report) {
  console.error(`chaos: ${report.skip}`);
  process.exit(2);
}
await mkdir(values.out, { recursive: true });
await writeFile(path.join(values.out, 'chaos-report.json'), `${JSON.stringify(report, null, 2)}\n`);
const markdown = toMarkdown(report);
await writeFile(path.join(values.out, 'chaos-report.md'), markdown);
console.log(markdown);
process.exit(report.passed ? 0 : 1);
