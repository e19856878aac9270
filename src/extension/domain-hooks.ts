/**
 * What a domain tells the inbox's screens about its own rows (the dashboard, the admin API, `payments
 * show`, the outbox listing), and how it forgets a person: the shapes its hooks answer with, so that
 * the screens show a domain's rows without knowing its tables.
 */
import type { PaymentRef } from '../store/inbox-store.js';

export type { PaymentRef };

/** One labelled value of a record a domain shows. Values are shown escaped, as any payload text. */
export interface SectionField {
  /** For people: "Amount", "Status". */
  label: string;
  value: string | number | null;
  /**
   * How a screen shows the value: `time` an ISO 8601 time (UTC), `status` a state in its colour,
   * `code` an identifier in a fixed-width font; plain text otherwise.
   */
  format?: 'time' | 'status' | 'code';
}

/** A titled part of a payment's detail: what one domain holds about the payment. */
export interface DomainSection {
  /** For people: "Order", "Enrollments". */
  title: string;
  /**
   * `fields`: each record as a list of labelled values (a record the payment has one of);
   * `table`: the records as rows of a table, the labels as its head (every record the same labels).
   */
  layout: 'fields' | 'table';
  /** Empty when the domain holds nothing about the payment: the section then says so. */
  records: SectionField[][];
}

/** A section as the screens get it: with the name of the domain that gave it. */
export interface PaymentSection extends DomainSection {
  domain: string;
}

/** Where a domain's outbox rows about one payment are: under these idempotency keys, or in these orderings. */
export interface PaymentOutboxRows {
  keys?: string[];
  orderingKeys?: string[];
}

/**
 * Whose data a domain erases from its own rows: a person, as the payments they made. A domain
 * removes or blanks what its rows hold about them (who they are, what they were granted) and keeps
 * what it must keep without them (an order's amount, say).
 */
export interface ErasureSelector {
  payments: readonly PaymentRef[];
}
