import type { Command } from 'commander';
import { PROVIDER_NAMES } from '../../model/delivery.js';
import { EVENT_STATUSES, eventDetail, findEvents } from '../../ops/event-lookup.js';
import { eventSummary, type EventSummary } from '../../ops/payment-detail.js';
import { choiceOption, configOrExit, withInbox } from '../context.js';
import { listingOptions, type ListingFlags } from '../filters.js';
import { printable, printFields, printJson, printTable, type Column } from '../output.js';

/** The columns of every events table (`events list`, `payments show`). */
export const EVENT_COLUMNS: Array<Column<EventSummary>> = [
  ['id', (r) => r.id],
  ['provider', (r) => r.provider],
  ['event id', (r) => r.event_id],
  ['type', (r) => r.event_type],
  ['payment', (r) => r.payment_id],
  ['status', (r) => r.status],
  ['attempts', (r) => r.attempts],
  ['received (UTC)', (r) => r.created_at],
  ['outcome / last error', (r) => r.outcome ?? r.last_error, 'whole'],
];

export function registerEventsCommands(program: Command): void {
  const events = program.command('events').description('list and inspect stored events');

  listingOptions(events.command('list').description('list events, newest first, filtered by provider, payment, status, type and time received'), {
    rows: 'events',
    written: 'received',
    limit: 50,
  })
    .option('--status <status>', EVENT_STATUSES.join(', '), choiceOption(EVENT_STATUSES))
    .option('--type <event-type>', 'provider event type, e.g. payment_intent.succeeded')
    .option('--email <address>', "the events of the payments with this payer e-mail, exactly (an access request's events)")
    .action(async (options: ListingFlags & { status?: (typeof EVENT_STATUSES)[number]; type?: string; email?: string }) => {
      const found = await withInbox(configOrExit().config, 'reads', (inbox) =>
        findEvents(inbox.database, {
          provider: options.provider,
          status: options.status,
          type: options.type,
          paymentId: options.payment,
          email: options.email,
          from: options.since,
          to: options.until,
          limit: options.limit,
        }),
      );
      const [rows, more] = [found.events.map(eventSummary), found.more];
      if (options.json) return printJson({ events: rows, more });
      if (rows.length === 0) return console.log('no events match');
      printTable(rows, EVENT_COLUMNS);
      if (more) console.log(`... more events match; raise --limit or narrow the filter`);
    });

  events
    .command('show <id>')
    .description('one event with its payload (secret fields hidden), attempts, last error, every processing and replay (id: provider event id or row id)')
    .option('--provider <name>', 'when the event id exists for several providers', choiceOption(PROVIDER_NAMES))
    .option('--json', 'print JSON')
    .action(async (id: string, options: { provider?: string; json?: boolean }) => {
      const detail = await withInbox(configOrExit().config, 'reads', (inbox) => eventDetail(inbox.database, id, options.provider));
      if (options.json) return printJson(detail);
      // The outcome in words only: its structured form is for scripts (--json).
      const { payload, headers, replays, processings, outcomeDetail: _structured, ...fields } = detail;
      printFields({ ...fields, headers: JSON.stringify(headers) });
      for (const replay of replays) {
        console.log(
          printable(
            `replayed ${replay.requestedAt.toISOString()} by ${replay.actor} (was ${replay.previousStatus}): ${replay.reason} -> ${replay.result ?? 'unfinished'}`.replace(
              /\s+/g,
              ' ',
            ),
          ),
        );
      }
      if (processings.length > 0) {
        console.log('processings, oldest first:');
        printTable(
          processings.map((processing, index) => ({ ...processing, number: index + 1 })),
          [
            ['#', (p) => p.number],
            ['processed (UTC)', (p) => p.processedAt],
            ['replay by', (p) => p.replay?.actor],
            ['reason', (p) => p.replay?.reason],
            ['outcome', (p) => p.outcome, 'whole'],
          ],
        );
      }
      console.log('payload:');
      console.log(prettyJson(payload));
    });
}

/** Indented for reading; the stored text itself is untouched (see --json for the exact bytes). */
function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return printable(text);
  }
}
