import type { Command } from 'commander';
import { runDemo } from '../demo.js';
import { printJson, printTable } from '../output.js';

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description('start the service on a temporary SQLite file with generated secrets, send a realistic mix of deliveries, and show what happened')
    .option('--keep', 'keep the temporary database and print where it is')
    .option('--json', 'print JSON')
    .action(async (flags: { keep?: boolean; json?: boolean }) => {
      const answers = (a: Record<string, number>) =>
        Object.entries(a)
          .map(([answer, n]) => (n > 1 ? `${n}x ${answer}` : answer))
          .join(', ');
      const report = await runDemo({
        keep: flags.keep,
        onStep: flags.json ? undefined : (step) => console.log(`${step.title}\n  sent ${step.sent}\n  answered ${answers(step.answers)}`),
      });
      if (flags.json) return printJson(report);
      console.log('\nEvents recorded (each processed exactly once):');
      printTable(report.events, [
        ['provider', (e) => e.provider],
        ['event id', (e) => e.eventId],
        ['type', (e) => e.eventType],
        ['status', (e) => e.status],
        ['outcome', (e) => e.outcome],
      ]);
      console.log('\nPayments (forward-only, whatever the delivery order):');
      printTable(report.payments, [
        ['provider', (p) => p.provider],
        ['payment', (p) => p.paymentId],
        ['status', (p) => p.status],
        ['user', (p) => p.userId],
        ['course', (p) => p.courseId],
      ]);
      const { orders, activeEnrollments, revokedEnrollments } = report.effects;
      const outbox = Object.entries(report.outbox)
        .map(([kind, n]) => `${n} ${kind}`)
        .join(', ');
      console.log(`\nBusiness effects: ${orders} orders, ${activeEnrollments} active + ${revokedEnrollments} revoked enrollments; outbox (one per payment and kind): ${outbox}.`);
      console.log(flags.keep ? `Database kept: DATABASE_URL=${report.databaseUrl} webhook-inbox events list` : 'The temporary database was removed (--keep keeps it).');
    });
}
