import type { Kysely, Migration, Transaction } from 'kysely';
import type { Config } from '../config/settings.js';
import type { ColumnTypes } from '../db/column-types.js';
import type { DomainMigrations } from '../db/migrate.js';
import type { InboxDatabase } from '../db/schema.js';
import type { EventHandler, PaymentHandlers } from '../domain/applier.js';
import type { OutboxTransports } from '../outbox/transport.js';
import type { ErasureSelector, PaymentOutboxRows, PaymentRef, PaymentSection } from './domain-hooks.js';
import type { PaymentDomain } from './payment-domain.js';

/** What the operator's screens and tools ask of an inbox's domains, put together. */
export interface DomainViews {
  /** Words for people, per outbox kind. */
  outboxKinds: Readonly<Record<string, string>>;
  /** Where every domain's outbox rows about the payments are; null when no domain keeps any. */
  paymentOutbox(payments: readonly PaymentRef[]): PaymentOutboxRows | null;
  /** The prefixes of the idempotency keys of every domain's rows about the provider's payments. */
  providerOutboxPrefixes(provider: string): string[];
  /** Every domain's sections about the payment, domain by domain. */
  describePayment(db: Kysely<InboxDatabase>, payment: PaymentRef): Promise<PaymentSection[]>;
  /** Every domain erases the person's data from its rows, in the order the domains run. */
  erase(tx: Transaction<InboxDatabase>, selector: ErasureSelector): Promise<void>;
}

/** What a list of domains amounts to for one inbox. */
export interface ComposedDomains extends DomainViews {
  handlers: PaymentHandlers;
  eventHandlers: EventHandler[];
  transports: OutboxTransports;
  migrations: DomainMigrations;
}

const DOMAIN_NAME = /^[a-z][a-z0-9_-]{0,63}$/;

/**
 * Puts domains together: handlers run domain by domain in the order given, a later domain's
 * transport (or words for a kind) replaces an earlier one's of the same kind. Each domain's hooks get
 * the settings loadConfig read for it; a domain with settings of its own that were not read is refused.
 */
export function composeDomains(config: Config, domains: readonly PaymentDomain[]): ComposedDomains {
  const names = new Set<string>();
  for (const { name } of domains) {
    if (!DOMAIN_NAME.test(name)) throw new Error(`domain name "${name}" must be lower-case letters, digits, - and _, starting with a letter`);
    if (names.has(name)) throw new Error(`two domains are named "${name}"`);
    names.add(name);
  }
  const configured = domains.map((domain) => ({ domain, settings: settingsOf(config, domain) }));
  const handlers: PaymentHandlers = {};
  for (const { domain, settings } of configured) {
    const own = typeof domain.handlers === 'function' ? domain.handlers(settings) : (domain.handlers ?? {});
    for (const [state, list] of Object.entries(own) as Array<[keyof PaymentHandlers, PaymentHandlers[keyof PaymentHandlers]]>) {
      handlers[state] = [...(handlers[state] ?? []), ...(list ?? [])];
    }
  }
  return {
    handlers,
    eventHandlers: domains.flatMap((domain) => domain.eventHandlers ?? []),
    transports: Object.assign(
      {},
      ...configured.map(({ domain, settings }) => (typeof domain.transports === 'function' ? domain.transports(config, settings) : domain.transports)),
    ) as OutboxTransports,
    migrations: {
      domains: [...names],
      active: (types) => Object.fromEntries(domains.flatMap((domain) => namedMigrations(domain, types))),
    },
    outboxKinds: Object.assign({}, ...domains.map((domain) => domain.outboxKinds ?? {})) as Record<string, string>,
    paymentOutbox: (payments) => {
      const rows = payments.flatMap((payment) => domains.map((domain) => domain.paymentOutbox?.(payment) ?? {}));
      const keys = rows.flatMap((row) => row.keys ?? []);
      const orderingKeys = rows.flatMap((row) => row.orderingKeys ?? []);
      if (keys.length + orderingKeys.length === 0) return null;
      return { ...(keys.length > 0 ? { keys } : {}), ...(orderingKeys.length > 0 ? { orderingKeys } : {}) };
    },
    providerOutboxPrefixes: (provider) => domains.flatMap((domain) => domain.providerOutboxPrefixes?.(provider) ?? []),
    describePayment: async (db, payment) => {
      const described = await Promise.all(
        domains.map(async (domain) => ((await domain.describePayment?.(db, payment)) ?? []).map((section) => ({ domain: domain.name, ...section }))),
      );
      return described.flat();
    },
    erase: async (tx, selector) => {
      for (const domain of domains) await domain.erase?.(tx, selector);
    },
  };
}

/** The settings loadConfig read for the domain; undefined for a domain without any. */
function settingsOf(config: Config, domain: PaymentDomain): unknown {
  if (!domain.settings) return undefined;
  if (!Object.hasOwn(config.domainSettings, domain.name)) {
    throw new Error(`the ${domain.name} domain has settings of its own, read with the inbox's: give it to loadConfig too (loadConfig(env, { domains }))`);
  }
  return config.domainSettings[domain.name];
}

/** A domain's migrations under their recorded names. */
function namedMigrations(domain: PaymentDomain, types: ColumnTypes): Array<[string, Migration]> {
  const migrations = typeof domain.migrations === 'function' ? domain.migrations(types) : (domain.migrations ?? {});
  return Object.entries(migrations).map(([name, migration]) => [`${domain.name}/${name}`, migration]);
}
