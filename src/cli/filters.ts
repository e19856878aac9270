import type { Command } from 'commander';
import { PROVIDER_NAMES } from '../model/delivery.js';
import { choiceOption, positiveIntegerOption, timeOption } from './context.js';

/** What the shared listing options parse to. */
export interface ListingFlags {
  provider?: string;
  payment?: string;
  since?: Date;
  until?: Date;
  limit: number;
  json?: boolean;
}

/**
 * The options every listing takes, spelled and explained the same everywhere: provider, payment
 * (unless `byPayment` is false: a list of payments), a time window on when rows were `written`
 * ("received" for events), a limit, and JSON.
 */
export function listingOptions(command: Command, { rows, written, limit, byPayment = true }: { rows: string; written: string; limit: number; byPayment?: boolean }): Command {
  command.option('--provider <name>', PROVIDER_NAMES.join(', '), choiceOption(PROVIDER_NAMES));
  if (byPayment) command.option('--payment <id>', "only those of one payment: the provider's payment id (pi_..., pay_..., a PayU txnid)");
  return command
    .option('--since <when>', `${written} at or after: a duration ago (24h, 7d) or a date (2024-05-01)`, timeOption)
    .option('--until <when>', `${written} before: a duration ago or a date`, timeOption)
    .option('--limit <n>', `at most this many ${rows}`, positiveIntegerOption, limit)
    .option('--json', 'print JSON');
}
