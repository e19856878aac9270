import type { ProviderRegistry } from '../../providers/registry.js';
import type { InboxStore } from '../../store/inbox-store.js';
import { isCalendarDate } from '../../config/duration.js';
import { OperationError } from '../errors.js';
import { readArchiveLines, type Archive, type ArchivedEvent } from './files.js';
import { loadManifest } from './manifest.js';

/** What to look for in an archive: one event (provider event id or row id), one payment, or one day. */
export type ArchiveQuery = { event: string } | { payment: string } | { day: string };

export interface ArchiveMatch {
  file: string;
  event: ArchivedEvent;
}

export interface RestoreReport {
  matched: number;
  restored: number;
  /** Already in the hot table (restored before, or never deleted). */
  present: number;
  events: Array<{ id: number; provider: string; eventId: string; eventType: string; createdAt: string; file: string; restored: boolean }>;
}

/**
 * Finds archived events without touching the database: reads only the files the query can match
 * (one day's files for --day), checks each against its manifest checksum, and keeps the newest copy of
 * an event archived more than once.
 */
export async function searchArchive(archive: Archive, query: ArchiveQuery, providers: ProviderRegistry): Promise<ArchiveMatch[]> {
  if ('day' in query && !isCalendarDate(query.day)) throw new OperationError(`--day must be a date like 2024-05-01 (got "${query.day}")`, 'bad_argument');
  const manifest = await loadManifest(archive.storage, { create: false });
  const parts = 'day' in query ? manifest.parts.filter((p) => p.day === query.day) : manifest.parts;
  const matches = new Map<number, ArchiveMatch>();
  for (const part of parts) {
    for (const line of await readArchiveLines(archive, part)) {
      const event = JSON.parse(line) as ArchivedEvent;
      if (matchesQuery(event, query, providers)) matches.set(event.id, { file: part.file, event });
    }
  }
  return [...matches.values()].sort((a, b) => a.event.id - b.event.id);
}

function matchesQuery(event: ArchivedEvent, query: ArchiveQuery, providers: ProviderRegistry): boolean {
  if ('day' in query) return true;
  if ('event' in query) return event.event_id === query.event || String(event.id) === query.event;
  let payload: unknown;
  try {
    payload = JSON.parse(event.payload);
  } catch {
    return false;
  }
  const canonical = providers.toCanonical(event.provider, { eventType: event.event_type, payload });
  return canonical.kind === 'payment' && canonical.paymentId === query.payment;
}

/**
 * Puts archived events back as they were (same id, status, outcome, payload bytes), each with its
 * body in one transaction (InboxStore.restoreEvent), for inspection or `replay`. Their archived keys
 * stay: the row and the key both mean "duplicate" to a redelivery.
 */
export async function restoreFromArchive(store: Pick<InboxStore, 'restoreEvent'>, archive: Archive, query: ArchiveQuery, providers: ProviderRegistry): Promise<RestoreReport> {
  const matches = await searchArchive(archive, query, providers);
  if (matches.length === 0) throw new OperationError(`nothing in ${archive.storage.location} matches ${describeQuery(query)}`, 'not_found');
  const report: RestoreReport = { matched: matches.length, restored: 0, present: 0, events: [] };
  for (const { file, event } of matches) {
    const restored = await store.restoreEvent(event);
    report[restored ? 'restored' : 'present']++;
    report.events.push({ id: event.id, provider: event.provider, eventId: event.event_id, eventType: event.event_type, createdAt: event.created_at, file, restored });
  }
  return report;
}

export function describeQuery(query: ArchiveQuery): string {
  if ('event' in query) return `event ${query.event}`;
  if ('payment' in query) return `payment ${query.payment}`;
  return `day ${query.day}`;
}
