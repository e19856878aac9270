import { Option, type Command } from 'commander';
import type { Config } from '../../config/settings.js';
import type { DomainViews } from '../../extension/compose-domains.js';
import { OutboxStore, RETRYABLE, type OutboxEntry, type OutboxFilter } from '../../outbox/outbox-store.js';
import { PROVIDER_NAMES } from '../../model/delivery.js';
import type { OutboxStatus } from '../../db/schema.js';
import { wholeNumberOption, withInbox, type DatabaseAccess } from '../context.js';
import { listingOptions, type ListingFlags } from '../filters.js';
import { tableText, type Column } from '../output.js';

const STATUSES: OutboxStatus[] = ['pending', 'sending', 'sent', 'failed', 'skipped'];

function withOutbox<T>(config: Config, access: DatabaseAccess, run: (outbox: OutboxStore, domains: DomainViews) => Promise<T>): Promise<T> {
  return withInbox(config, access, (inbox) => run(new OutboxStore(inbox.database, inbox.clock), inbox.domains));
}

/** The columns of every outbox table (`outbox list`, `payments show`): key and status first, then what an operator needs to decide. */
export const OUTBOX_COLUMNS: Array<Column<OutboxEntry>> = [
  ['id', (entry) => entry.id],
  ['status', (entry) => entry.status],
  ['kind', (entry) => entry.kind],
  ['key', (entry) => entry.idempotencyKey],
  ['attempts', (entry) => entry.attempts],
  ['written (UTC)', (entry) => entry.createdAt],
  ['sent / next attempt', (entry) => entry.sentAt ?? entry.nextAttemptAt],
  ['last error / outcome', (entry) => entry.lastError ?? entry.outcome, 'whole'],
];

/**
 * The rows of one payment, or of every payment of a provider, as the domains in use find them (the
 * course platform by its keys, forwarding by the payment's ordering); null when no domain keeps any.
 */
function paymentRows({ provider, payment }: ListingFlags, domains: DomainViews): Pick<OutboxFilter, 'keys' | 'orderingKeys' | 'keyPrefixes'> | null {
  if (payment === undefined) {
    if (!provider) return {};
    const keyPrefixes = domains.providerOutboxPrefixes(provider);
    return keyPrefixes.length > 0 ? { keyPrefixes } : null;
  }
  return domains.paymentOutbox((provider ? [provider] : PROVIDER_NAMES).map((name) => ({ provider: name, paymentId: payment })));
}

/**
 * `webhook-inbox outbox list|retry`: the side effects (receipts, fulfilment requests) for operators.
 * A refused retry throws, so the CLI reports it and exits 1.
 */
export function registerOutboxCommand(program: Command, loadConfig: () => Config, print: (line: string) => void = console.log): void {
  const outbox = program.command('outbox').description('inspect and retry side effects: receipt e-mails, fulfilment requests');

  listingOptions(outbox.command('list').description('list outbox rows, newest first'), { rows: 'rows', written: 'written', limit: 50 })
    .addOption(new Option('--status <status>', 'only rows in this status').choices(STATUSES))
    .option('--kind <kind>', "only rows of this kind, as stored: a domain's (the course platform's receipt_email, fulfilment, fulfilment_cancellation; forward), or your own")
    .action(async (options: ListingFlags & { status?: OutboxStatus; kind?: string }) => {
      const { status, kind, since, until, limit } = options;
      const rows = await withOutbox(loadConfig(), 'reads', async (store, domains) => {
        const ofPayments = paymentRows(options, domains);
        return ofPayments ? store.list({ status, kind, since, until, ...ofPayments, limit: limit + 1 }) : [];
      });
      const entries = rows.slice(0, limit);
      const more = rows.length > limit;
      if (options.json) print(JSON.stringify(entries, null, 2));
      else if (entries.length === 0) print(status ? `no ${status} outbox rows` : 'no outbox rows match');
      else {
        print(tableText(entries, OUTBOX_COLUMNS));
        if (more) print('... more rows match; raise --limit or narrow the filter');
      }
    });

  const retry = outbox
    .command('retry')
    .description('make a failed or skipped row due again (same idempotency key, fresh attempts): one by id, or all with --status')
    .argument('[id]', 'outbox row id', wholeNumberOption(Number.MAX_SAFE_INTEGER))
    .addOption(new Option('--status <status>', 'every row in this status').choices(RETRYABLE))
    .option('--json', 'print JSON: {"retried": <rows made due again>}')
    .action(async (id: number | undefined, options: { status?: OutboxStatus; json?: boolean }) => {
      if ((id === undefined) === (options.status === undefined)) {
        retry.error('outbox retry: give either a row id or --status failed|skipped', { exitCode: 2 });
      }
      await withOutbox(loadConfig(), 'writes', async (store) => {
        const retried = await store.retry(id === undefined ? { status: options.status! } : { id });
        if (id !== undefined && retried === 0) {
          const entry = await store.find(id);
          throw new Error(entry ? `outbox row ${id} is ${entry.status}; only ${RETRYABLE.join(' or ')} rows can be retried` : `no outbox row ${id}`);
        }
        if (options.json) print(JSON.stringify({ retried }));
        else print(id === undefined ? `${retried} ${options.status} rows are pending again` : `outbox row ${id} is pending again`);
      });
    });
}
