import { Argument, type Command } from 'commander';
import { paymentDetail } from '../../ops/payment-detail.js';
import { PROVIDER_NAMES } from '../../model/delivery.js';
import { configOrExit, withInbox } from '../context.js';
import { printFields, printJson, printTable } from '../output.js';
import { EVENT_COLUMNS } from './events.js';
import { OUTBOX_COLUMNS } from './outbox.js';

export function registerPaymentsCommands(program: Command): void {
  const payments = program.command('payments').description('look at payments: state, events, order, enrollment, side effects');

  payments
    .command('show')
    .description('one payment: its state, its events in the order received, its order, enrollment and outbox rows')
    .addArgument(new Argument('<provider>', 'the provider').choices(PROVIDER_NAMES))
    .argument('<payment-id>', "the provider's payment id (PaymentIntent pi_..., Razorpay pay_..., PayU txnid)")
    .option('--json', 'print JSON')
    .action(async (provider: string, paymentId: string, options: { json?: boolean }) => {
      const { config } = configOrExit();
      const detail = await withInbox(config, 'reads', (inbox) => paymentDetail(inbox.store.db, inbox.clock, provider, paymentId, config.coursePlatform));
      if (options.json) return printJson(detail);
      const { payment, order } = detail;
      printFields({
        payment: `${provider} ${paymentId}`,
        status: payment?.status ?? 'no payment row yet: none of its events has been processed',
        amount: payment && payment.amount !== null ? `${payment.amount} ${payment.currency ?? ''} (minor units)`.trim() : null,
        user: payment?.user_id,
        course: payment?.course_id,
        email: payment?.email,
        'created (UTC)': payment?.created_at,
        'updated (UTC)': payment?.updated_at,
      });
      section(`Events, in the order received${detail.moreEvents ? ' (the first 1000)' : ''}`, detail.events, (events) => printTable(events, EVENT_COLUMNS));
      section('Order', order ? [order] : [], (orders) =>
        printTable(orders, [
          ['id', (o) => o.id],
          ['status', (o) => o.status],
          ['amount', (o) => o.amount],
          ['currency', (o) => o.currency],
          ['user', (o) => o.user_id],
          ['course', (o) => o.course_id],
          ['created (UTC)', (o) => o.created_at],
          ['updated (UTC)', (o) => o.updated_at],
        ]),
      );
      section('Enrollment', detail.enrollments, (enrollments) =>
        printTable(enrollments, [
          ['id', (e) => e.id],
          ['user', (e) => e.user_id],
          ['course', (e) => e.course_id],
          ['status', (e) => e.status],
          ['created (UTC)', (e) => e.created_at],
          ['updated (UTC)', (e) => e.updated_at],
        ]),
      );
      section('Outbox', detail.outbox, (rows) => printTable(rows, OUTBOX_COLUMNS));
    });
}

/** A titled block; "none" when it is empty. */
function section<T>(title: string, rows: T[], print: (rows: T[]) => void): void {
  console.log(`\n${title}:${rows.length === 0 ? ' none' : ''}`);
  if (rows.length > 0) print(rows);
}
