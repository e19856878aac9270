import { Option, type Command } from 'commander';
import type { Config } from '../../config.js';
import { OutboxStore, RETRYABLE, type OutboxEntry } from '../../outbox/outbox-store.js';
import type { OutboxStatus } from '../../store/schema.js';
import { positiveIntegerOption, wholeNumberOption, withInbox } from '../context.js';

const STATUSES: OutboxStatus[] = ['pending', 'sending', 'sent', 'failed', 'skipped'];

function withOutbox<T>(config: Config, run: (outbox: OutboxStore) => Promise<T>): Promise<T> {
  return withInbox(config, (inbox) => run(new OutboxStore(inbox.store.db, inbox.clock)));
}

/** One line per row: the key and status first, then what an operator needs to decide. */
function outboxLine(entry: OutboxEntry): string {
  const when = entry.status === 'sent' ? `sent ${entry.sentAt?.toISOString()}` : entry.nextAttemptAt ? `next ${entry.nextAttemptAt.toISOString()}` : null;
  const detail = entry.lastError ? `error: ${entry.lastError}` : entry.outcome;
  return [`#${entry.id}`, entry.status, entry.kind, entry.idempotencyKey, `attempts=${entry.attempts}`, when, detail]
    .filter((part) => part !== null)
    .join('  ')
    .replace(/\s*\n\s*/g, ' ');
}

/**
 * `webhook-inbox outbox list|retry`: the side effects (receipts, fulfilment requests) for operators.
 * A refused retry throws, so the CLI reports it and exits 1.
 */
export function registerOutboxCommand(program: Command, loadConfig: () => Config, print: (line: string) => void = console.log): void {
  const outbox = program.command('outbox').description('inspect and retry side effects: receipt e-mails, fulfilment requests');

  outbox
    .command('list')
    .description('list outbox rows, newest first')
    .addOption(new Option('--status <status>', 'only rows in this status').choices(STATUSES))
    .option('--limit <n>', 'at most this many rows', positiveIntegerOption, 50)
    .option('--json', 'print JSON')
    .action(async (options: { status?: OutboxStatus; limit: number; json?: boolean }) => {
      const entries = await withOutbox(loadConfig(), (store) => store.list({ status: options.status, limit: options.limit }));
      if (options.json) print(JSON.stringify(entries, null, 2));
      else if (entries.length === 0) print(options.status ? `no ${options.status} outbox rows` : 'the outbox is empty');
      else for (const entry of entries) print(outboxLine(entry));
    });

  const retry = outbox
    .command('retry')
    .description('make a failed or skipped row due again (same idempotency key, fresh attempts): one by id, or all with --status')
    .argument('[id]', 'outbox row id', wholeNumberOption(Number.MAX_SAFE_INTEGER))
    .addOption(new Option('--status <status>', 'every row in this status').choices(RETRYABLE))
    .action(async (id: number | undefined, options: { status?: OutboxStatus }) => {
      if ((id === undefined) === (options.status === undefined)) {
        retry.error('outbox retry: give either a row id or --status failed|skipped', { exitCode: 2 });
      }
      await withOutbox(loadConfig(), async (store) => {
        if (id === undefined) {
          print(`${await store.retry({ status: options.status! })} ${options.status} rows are pending again`);
        } else if ((await store.retry({ id })) === 1) {
          print(`outbox row ${id} is pending again`);
        } else {
          const entry = await store.find(id);
          throw new Error(entry ? `outbox row ${id} is ${entry.status}; only ${RETRYABLE.join(' or ')} rows can be retried` : `no outbox row ${id}`);
        }
      });
    });
}
