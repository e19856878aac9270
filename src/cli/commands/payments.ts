import { Argument, InvalidArgumentError, type Command } from 'commander';
import { listPayments } from '../../admin/payment-list.js';
import { paymentDetailView, type PaymentListItem } from '../../admin/payment-view.js';
import type { SectionField } from '../../extension/domain-hooks.js';
import { paymentDetail } from '../../ops/payment-detail.js';
import { PROVIDER_NAMES } from '../../model/delivery.js';
import { PAYMENT_STATE_ORDER, type PaymentState } from '../../model/payment-event.js';
import { choiceOption, configOrExit, withInbox } from '../context.js';
import { listingOptions, type ListingFlags } from '../filters.js';
import { printFields, printJson, printTable, type Column } from '../output.js';
import { EVENT_COLUMNS } from './events.js';
import { OUTBOX_COLUMNS } from './outbox.js';

const PAYMENT_COLUMNS: Array<Column<PaymentListItem>> = [
  ['provider', (p) => p.provider],
  ['payment', (p) => p.paymentId],
  ['status', (p) => p.status],
  ['amount (minor units)', (p) => p.amount],
  ['currency', (p) => p.currency],
  ['updated (UTC)', (p) => new Date(p.updatedAt)],
];

/** `--metadata KEY=VALUE`: split at the first `=`, so a value may hold one. */
function metadataOption(text: string): { key: string; value: string } {
  const split = text.indexOf('=');
  if (split < 1) throw new InvalidArgumentError('expected KEY=VALUE, e.g. order_id=1234');
  return { key: text.slice(0, split), value: text.slice(split + 1) };
}

interface PaymentListFlags extends Omit<ListingFlags, 'payment'> {
  state?: PaymentState;
  email?: string;
  metadata?: { key: string; value: string };
}

export function registerPaymentsCommands(program: Command): void {
  const payments = program.command('payments').description('look at payments: state, events, what the domains hold about them, side effects');

  listingOptions(payments.command('list').description('list payments, newest first by their last change, filtered by provider, state, time updated, e-mail or a metadata value'), {
    rows: 'payments',
    written: 'updated',
    limit: 50,
    byPayment: false,
  })
    .option('--state <state>', PAYMENT_STATE_ORDER.join(', '), choiceOption(PAYMENT_STATE_ORDER))
    .option('--email <address>', "the payment's e-mail, exactly as the provider sent it")
    .option('--metadata <key=value>', 'a metadata entry, key and value exactly (Stripe metadata, Razorpay notes, PayU udf1-udf5)', metadataOption)
    .action(async (options: PaymentListFlags) => {
      const filter = {
        provider: options.provider,
        status: options.state,
        from: options.since,
        to: options.until,
        email: options.email,
        metadata: options.metadata,
        limit: options.limit,
      };
      const page = await withInbox(configOrExit().config, 'reads', (inbox) => listPayments(inbox.database, filter));
      const more = page.nextCursor !== null;
      if (options.json) return printJson({ payments: page.payments, more });
      if (page.payments.length === 0) return console.log('no payments match');
      printTable(page.payments, PAYMENT_COLUMNS);
      if (more) console.log(`... more payments match; raise --limit or narrow the filter`);
    });

  payments
    .command('show')
    .description('one payment: its state, its events in the order received, what each domain holds about it (the course platform: order, enrollments), its outbox rows')
    .addArgument(new Argument('<provider>', 'the provider').choices(PROVIDER_NAMES))
    .argument('<payment-id>', "the provider's payment id (PaymentIntent pi_..., Razorpay pay_..., PayU txnid)")
    .option('--json', 'print JSON')
    .action(async (provider: string, paymentId: string, options: { json?: boolean }) => {
      const detail = await withInbox(configOrExit().config, 'reads', (inbox) => paymentDetail(inbox.database, inbox.clock, inbox.domains, provider, paymentId));
      if (options.json) return printJson(paymentDetailView(detail));
      const { payment } = detail;
      printFields({
        payment: `${provider} ${paymentId}`,
        status: payment?.status ?? 'no payment row yet: none of its events has been processed',
        amount: payment && payment.amount !== null ? `${payment.amount} ${payment.currency ?? ''} (minor units)`.trim() : null,
        email: payment?.email,
        'created (UTC)': payment?.created_at,
        'updated (UTC)': payment?.updated_at,
      });
      section(`Events, in the order received${detail.moreEvents ? ' (the first 1000)' : ''}`, detail.events, (events) => printTable(events, EVENT_COLUMNS));
      for (const { title, records } of detail.sections) {
        section(title, records, (rows) =>
          printTable(
            rows,
            rows[0]!.map((field, index): Column<SectionField[]> => [field.label, (record) => fieldValue(record[index])]),
          ),
        );
      }
      section('Outbox', detail.outbox, (rows) => printTable(rows, OUTBOX_COLUMNS));
    });
}

/** A domain's value as every table prints it: a time as the database columns hold times. */
function fieldValue(field: SectionField | undefined): unknown {
  if (field?.format === 'time' && typeof field.value === 'string') return new Date(field.value);
  return field?.value;
}

/** A titled block; "none" when it is empty. */
function section<T>(title: string, rows: T[], print: (rows: T[]) => void): void {
  console.log(`\n${title}:${rows.length === 0 ? ' none' : ''}`);
  if (rows.length > 0) print(rows);
}
