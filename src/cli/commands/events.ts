import type { Command } from 'commander';
import { PROVIDER_NAMES } from '../../model/delivery.js';
import { EVENT_STATUSES, eventDetail, findEvents } from '../../ops/event-lookup.js';
import { choiceOption, configOrExit, positiveIntegerOption, timeOption, withInbox } from '../context.js';
import { printFields, printJson, printTable } from '../output.js';

export function registerEventsCommands(program: Command): void {
  const events = program.command('events').description('list and inspect stored events');

  events
    .command('list')
    .description('list events, oldest first, filtered by provider, status, type and time received')
    .option('--provider <name>', `stripe, razorpay or payu`, choiceOption(PROVIDER_NAMES))
    .option('--status <status>', EVENT_STATUSES.join(', '), choiceOption(EVENT_STATUSES))
    .option('--type <event-type>', 'provider event type, e.g. payment_intent.succeeded')
    .option('--since <when>', 'received at or after: a duration ago (24h, 7d) or a date (2024-05-01)', timeOption)
    .option('--until <when>', 'received before: a duration ago or a date', timeOption)
    .option('--limit <n>', 'at most this many', positiveIntegerOption, 50)
    .option('--json', 'print JSON')
    .action(async (options: { provider?: string; status?: (typeof EVENT_STATUSES)[number]; type?: string; since?: Date; until?: Date; limit: number; json?: boolean }) => {
      const { events: rows, more } = await withInbox(configOrExit().config, (inbox) => findEvents(inbox.store.db, options));
      if (options.json) return printJson({ events: rows.map(({ payload: _payload, headers: _headers, lease_token: _token, ...row }) => row), more });
      if (rows.length === 0) return console.log('no events match');
      printTable(rows, [
        ['id', (r) => r.id],
        ['provider', (r) => r.provider],
        ['event id', (r) => r.event_id],
        ['type', (r) => r.event_type],
        ['status', (r) => r.status],
        ['attempts', (r) => r.attempts],
        ['received (UTC)', (r) => r.created_at],
        ['outcome / last error', (r) => r.outcome ?? r.last_error],
      ]);
      if (more) console.log(`... more events match; raise --limit or narrow the filter`);
    });

  events
    .command('show <id>')
    .description('one event with its payload, attempts, last error, outcome and replays (id: provider event id or row id)')
    .option('--provider <name>', 'when the event id exists for several providers', choiceOption(PROVIDER_NAMES))
    .option('--json', 'print JSON')
    .action(async (id: string, options: { provider?: string; json?: boolean }) => {
      const detail = await withInbox(configOrExit().config, (inbox) => eventDetail(inbox.store.db, id, options.provider));
      if (options.json) return printJson(detail);
      const { payload, headers, replays, ...fields } = detail;
      printFields({ ...fields, headers: JSON.stringify(headers) });
      for (const replay of replays) {
        console.log(`replayed ${replay.requestedAt.toISOString()} by ${replay.actor} (was ${replay.previousStatus}): ${replay.reason} -> ${replay.result ?? 'unfinished'}`);
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
    return text;
  }
}
