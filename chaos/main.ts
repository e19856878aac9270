import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { positiveIntegerOption } from '../src/cli/context.js';
import { toMarkdown } from './report.js';
import { runChaos } from './run.js';
import { LONG_RUN, SHORT_RUN } from './sizes.js';
import { SERVER_BACKENDS, type ServerBackendName } from '../test/support/services.js';

/**
 * `npm run chaos [-- --store mysql|postgres --payments N --rate N --seed N --short --out DIR]`: the
 * long run; writes chaos-report.json and chaos-report.md (chaos-report-postgres.* on PostgreSQL) to
 * chaos/results/ (or --out) and exits 1 on any violation.
 */
const program = new Command()
  .name('npm run chaos --')
  .description('Play the providers while breaking the system, then check the invariants')
  .addOption(new Option('--store <store>', 'the database the cluster runs on, a private server of its own').choices(SERVER_BACKENDS).default('mysql'))
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
const values = program.opts<{ store: ServerBackendName; short?: boolean; payments?: number; rate?: number; seed?: number; out: string }>();
const base = values.short ? SHORT_RUN : LONG_RUN;
const options = {
  ...base,
  seed: values.seed ?? base.seed,
  payments: values.payments ?? base.payments,
  cluster: { ...base.cluster, store: values.store },
  simulator: { ...base.simulator, eventsPerSecond: values.rate ?? base.simulator.eventsPerSecond },
};

const report = await runChaos(options, (line) => console.log(line));
if ('skip' in report) {
  console.error(`chaos: ${report.skip}`);
  process.exit(2);
}
await mkdir(values.out, { recursive: true });
// The MariaDB report keeps the name it has always had.
const name = values.store === 'mysql' ? 'chaos-report' : `chaos-report-${values.store}`;
await writeFile(path.join(values.out, `${name}.json`), `${JSON.stringify(report, null, 2)}\n`);
const markdown = toMarkdown(report);
await writeFile(path.join(values.out, `${name}.md`), markdown);
console.log(markdown);
process.exit(report.passed ? 0 : 1);
