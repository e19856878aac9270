import type { Kysely, Migration, Transaction } from 'kysely';
import type { SettingsReader } from '../config/environment.js';
import type { Config } from '../config/settings.js';
import type { ColumnTypes } from '../db/column-types.js';
import type { InboxDatabase } from '../db/schema.js';
import type { EventHandler, PaymentHandlers } from '../domain/applier.js';
import type { OutboxTransports } from '../outbox/transport.js';
import type { DomainSection, ErasureSelector, PaymentOutboxRows, PaymentRef } from './domain-hooks.js';

/**
 * A business domain plugged into the inbox: its settings, its tables (migrations), what it does when
 * a payment changes (handlers, in the processing transaction), how its side effects leave (outbox
 * transports), how its rows appear on the operator's screens, and how it forgets a person. The inbox
 * knows payments; what a payment means to a business (a licence granted, a plan renewed) is the
 * domain's, read from the payment's metadata. `S` is the type of its settings.
 */
export interface PaymentDomain<DB extends InboxDatabase = InboxDatabase, S = unknown> {
  /** Lower-case letters, digits, `-` and `_`; its migrations are recorded as `<name>/<migration>`. */
  readonly name: string;
  /**
   * Reads its own settings from the environment, with the inbox's (loadConfig's `domains`): a bad
   * value is a problem named by its variable (`read.problem`), reported with every other at start.
   * Plain data (the configuration is handed to the workers' thread); the other hooks get it.
   */
  readonly settings?: (read: SettingsReader) => S;
  /**
   * Its tables, applied with the inbox's migrations and in the same table (`schema_migrations`), in
   * name order after the inbox's own. Kysely migrations; the function form gets the column types the
   * inbox uses itself on this database (an id column, case-sensitive keys, ...).
   */
  readonly migrations?: Record<string, Migration> | ((types: ColumnTypes) => Record<string, Migration>);
  /** Per payment state, run when an event moves a payment there or completes its details. */
  readonly handlers?: PaymentHandlers<DB> | ((settings: S) => PaymentHandlers<DB>);
  /** Run for every event processed, about a payment or not, before the payment's handlers. */
  readonly eventHandlers?: Array<EventHandler<DB>>;
  /** Transports for the outbox kinds it writes; the function form gets the configuration and its settings. */
  readonly transports?: OutboxTransports | ((config: Config, settings: S) => OutboxTransports);
  /** Words for people for the outbox kinds it writes (`{ door_access: 'door access grant' }`), for the dashboard. */
  readonly outboxKinds?: Readonly<Record<string, string>>;
  /** Where its outbox rows about a payment are, for the payment's detail and `outbox list --payment`. */
  readonly paymentOutbox?: (payment: PaymentRef) => PaymentOutboxRows;
  /** The prefixes of the idempotency keys of its rows about a provider's payments, for `outbox list --provider`. */
  readonly providerOutboxPrefixes?: (provider: string) => string[];
  /**
   * What its own rows hold about a payment, as titled sections of labelled values: the dashboard's
   * payment page, the admin API and `payments show` show them after the payment's events.
   */
  readonly describePayment?: (db: Kysely<DB>, payment: PaymentRef) => Promise<DomainSection[]>;
  /** Erases a person's data from its own rows, inside the caller's transaction (see ErasureSelector). */
  readonly erase?: (tx: Transaction<DB>, selector: ErasureSelector) => Promise<void>;
}

/**
 * A domain over its own database and settings types, as the inbox takes it: domains over different
 * databases go in one list. The transaction is the same one whatever a handler calls its type.
 */
export function definePaymentDomain<DB extends InboxDatabase, S = undefined>(domain: PaymentDomain<DB, S>): PaymentDomain {
  return domain as unknown as PaymentDomain;
}
