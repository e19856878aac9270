import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Command, CommanderError } from 'commander';
import { positiveIntegerOption } from '../src/cli/context.js';
import { toMarkdown } from './report.js';
import { runChaos } from './run.js';
import { LONG_RUN, SHORT_RUN } from './sizes.js';

/**
 * `npm run chaos [-- --payments N --rate N --seed N --short --out DIR]`: the long run; writes
 * chaos-report.json and chaos-report.md to chaos/results/ (or --out) and exits 1 on any violation.
 */
const program = new Command()
  .name('npm run chaos --')
  .description('Play the providers while breaking the system, then check the invariants')
  .option('--short', 'the size that runs inside npm test')
  .option('--payments <n>', 'payment lifecycles to simulate', positiveIntegerOption)
  .option('--rate <n>', 'events per second the simulated providers send', positiveIntegerOption)
  .option('--seed <n>', 'seed of the simulation and the faults, to reproduce a run', positiveIntegerOption)
  .option('--out <dir>', 'where the reports go', path.join(import.meta.dirname, 'results'))
  .exitOverride();
try {
  program.parse();
} catch (error) {
  // Commander has already printed the help or the error.
  if (error instanceof CommanderError) process.exit(error.exitCode);
  throw error;
}
const values = program.opts<{ short?: boolean; payments?: number; rate?: number; seed?: number; out: string }>();
const base = values.short ? SHORT_RUN : LONG_RUN;
const options = {
  ...base,
  seed: values.seed ?? base.seed,
  payments: values.payments ?? base.payments,
  simulator: { ...base.simulator, eventsPerSecond: values.rate ?? base.simulator.eventsPerSecond },
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
