import type { Migration } from 'kysely';
import type { Config } from '../config/settings.js';
import type { ColumnTypes } from '../db/column-types.js';
import type { DomainMigrations } from '../db/migrate.js';
import type { InboxDatabase } from '../db/schema.js';
import type { EventHandler, PaymentHandlers } from '../domain/applier.js';
import type { OutboxTransports } from '../outbox/transport.js';

/**
 * A business domain plugged into the inbox: its tables (migrations), what it does when a payment
 * changes (handlers, in the processing transaction), and how its side effects leave (outbox
 * transports). The course platform is one; a team's own handlers are another.
 */
export interface PaymentDomain<DB extends InboxDatabase = InboxDatabase> {
  /** Lower-case letters, digits, `-` and `_`; its migrations are recorded as `<name>/<migration>`. */
  readonly name: string;
  /**
   * Its tables, applied with the inbox's migrations and in the same table (`schema_migrations`), in
   * name order after the inbox's own. Kysely migrations; the function form gets the column types the
   * inbox uses itself on this database (an id column, case-sensitive keys, ...).
   */
  readonly migrations?: Record<string, Migration> | ((types: ColumnTypes) => Record<string, Migration>);
  /** Per payment state, run when an event moves a payment there or completes its details. */
  readonly handlers?: PaymentHandlers<DB>;
  /** Run for every event processed, about a payment or not, before the payment's handlers. */
  readonly eventHandlers?: Array<EventHandler<DB>>;
  /** Transports for the outbox kinds it writes; the function form gets the configuration. */
  readonly transports?: OutboxTransports | ((config: Config) => OutboxTransports);
}

/**
 * A domain over its own database type, as the inbox takes it: domains over different databases go in
 * one list. The transaction is the same one whatever a handler calls its type.
 */
export function definePaymentDomain<DB extends InboxDatabase>(domain: PaymentDomain<DB>): PaymentDomain {
  return domain as unknown as PaymentDomain;
}

/** What a list of domains amounts to for one inbox. */
export interface ComposedDomains {
  handlers: PaymentHandlers;
  eventHandlers: EventHandler[];
  transports: OutboxTransports;
  migrations: DomainMigrations;
}

const DOMAIN_NAME = /^[a-z][a-z0-9_-]{0,63}$/;

/**
 * Puts domains together: handlers run domain by domain in the order given, a later domain's
 * transport replaces an earlier one's of the same kind. `dormant` are the inbox's optional domains
 * not in use: their migrations are known, so an earlier run that applied them is no corruption.
 */
export function composeDomains(config: Config, domains: readonly PaymentDomain[], dormant: readonly PaymentDomain[] = []): ComposedDomains {
  const names = new Set<string>();
  for (const { name } of domains) {
    if (!DOMAIN_NAME.test(name)) throw new Error(`domain name "${name}" must be lower-case letters, digits, - and _, starting with a letter`);
    if (names.has(name)) throw new Error(`two domains are named "${name}"`);
    names.add(name);
  }
  const handlers: PaymentHandlers = {};
  for (const domain of domains) {
    for (const [state, list] of Object.entries(domain.handlers ?? {}) as Array<[keyof PaymentHandlers, PaymentHandlers[keyof PaymentHandlers]]>) {
      handlers[state] = [...(handlers[state] ?? []), ...(list ?? [])];
    }
  }
  return {
    handlers,
    eventHandlers: domains.flatMap((domain) => domain.eventHandlers ?? []),
    transports: Object.assign({}, ...domains.map((domain) => (typeof domain.transports === 'function' ? domain.transports(config) : domain.transports))) as OutboxTransports,
    migrations: {
      active: (types) => Object.fromEntries(domains.flatMap((domain) => namedMigrations(domain, types))),
      dormant: (types) => dormant.filter((domain) => !names.has(domain.name)).flatMap((domain) => namedMigrations(domain, types).map(([name]) => name)),
    },
  };
}

/** A domain's migrations under their recorded names. */
function namedMigrations(domain: PaymentDomain, types: ColumnTypes): Array<[string, Migration]> {
  const migrations = typeof domain.migrations === 'function' ? domain.migrations(types) : (domain.migrations ?? {});
  return Object.entries(migrations).map(([name, migration]) => [`${domain.name}/${name}`, migration]);
}
