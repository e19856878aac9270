import type { Kysely } from 'kysely';
import type { Clock } from '../../clock.js';
import { toDbTime, type DbTime, type InboxDatabase } from '../../db/schema.js';
import { selectEventRows, type EventRow } from '../../db/event-rows.js';
import type { InboxStore } from '../../store/inbox-store.js';
import type { Inbox } from '../../inbox.js';
import { archiveLine, readArchiveLines, writeArchiveFile, type Archive } from './files.js';
import { loadManifest, saveManifest, type ArchivePart, type Manifest } from './manifest.js';
import { lockArchiveRun } from './run-lock.js';

export interface ArchiveOptions {
  /** Where the files go and the keys that seal them (openArchive). */
  archive: Archive;
  /** Processed events received longer ago than this are archived. */
  olderThanMs: number;
  /** Events per file (a day with more gets several files). */
  eventsPerFile?: number;
  /** Rows verified and deleted per statement: bounds every lock to a short one. */
  deleteBatchSize?: number;
  onProgress?: (archived: number, total: number) => void;
}

export interface ArchiveReport {
  /** The archive's location, as given. */
  dir: string;
  cutoff: string;
  /** Files finished by this run, including ones an interrupted run had written (`resumed`). */
  parts: Array<SettledPart & { resumed: boolean }>;
  archived: number;
  kept: number;
  elapsedMs: number;
}

/** A file whose rows were verified: `deleted` now, `kept` because they changed since it was written. */
export type SettledPart = Pick<ArchivePart, 'file' | 'day' | 'events' | 'bytes' | 'sha256'> & { deleted: number; kept: number };

const DEFAULT_EVENTS_PER_FILE = 2000;
const DEFAULT_DELETE_BATCH = 500;

/**
 * Moves processed events older than a cutoff into gzip JSON Lines files, one series per day, with a
 * manifest of counts and SHA-256 checksums. Per file: write it whole (temp + rename), record it in the
 * manifest as `written`, read it back and compare every line with its row, keep the event's key in
 * archived_event_keys, delete the rows in small batches, mark the file `complete`. A run killed at any
 * point leaves either rows not yet in a manifest file (archived again next time) or a `written` file
 * that the next run finishes first; rows are deleted only after their line was read back intact.
 */
export class Archiver {
  private readonly db: Kysely<InboxDatabase>;
  private readonly store: InboxStore;
  private readonly clock: Clock;

  /** Reads the inbox's events from its database; its store removes those archived. */
  constructor(inbox: Pick<Inbox, 'database' | 'store' | 'clock'>) {
    ({ database: this.db, store: this.store, clock: this.clock } = inbox);
  }

  async runOnce(options: ArchiveOptions): Promise<ArchiveReport> {
    const started = this.clock.now();
    const cutoff = toDbTime(new Date(started.getTime() - options.olderThanMs));
    const { archive } = options;
    const { storage } = archive;
    const lock = await lockArchiveRun(this.db, this.clock, storage);
    try {
      const manifest = await loadManifest(storage, { create: true });
      const report: ArchiveReport = { dir: storage.location, cutoff: `${cutoff} UTC`, parts: [], archived: 0, kept: 0, elapsedMs: 0 };
      const total = (await this.countArchivable(cutoff)) + manifest.parts.filter((p) => p.state === 'written').reduce((n, p) => n + p.events, 0);
      const progress = (part: SettledPart & { resumed: boolean }) => {
        report.parts.push(part);
        report.archived += part.deleted;
        report.kept += part.kept;
        options.onProgress?.(report.archived + report.kept, total);
      };

      for (const part of manifest.parts.filter((p) => p.state === 'written')) {
        await lock.confirm();
        progress({ ...(await this.settle(options, manifest, part)), resumed: true });
      }
      let after: { createdAt: DbTime; id: number } | null = null;
      for (;;) {
        const rows = await this.nextDay(cutoff, after, options.eventsPerFile ?? DEFAULT_EVENTS_PER_FILE);
        if (rows.length === 0) break;
        const last = rows[rows.length - 1]!;
        after = { createdAt: last.created_at, id: Number(last.id) };
        await lock.confirm();
        const part = await this.write(archive, manifest, rows);
        progress({ ...(await this.settle(options, manifest, part)), resumed: false });
      }
      report.elapsedMs = this.clock.now().getTime() - started.getTime();
      return report;
    } finally {
      await lock.release();
    }
  }

  private async countArchivable(cutoff: DbTime): Promise<number> {
    const row = await this.db
      .selectFrom('webhook_events')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('status', '=', 'processed')
      .where('created_at', '<', cutoff)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /**
   * The next archivable rows after the cursor, all from one day. The cursor (created_at, id) moves
   * forward only, so a row this run could not delete is not written twice in one run.
   */
  private async nextDay(cutoff: DbTime, after: { createdAt: DbTime; id: number } | null, limit: number): Promise<EventRow[]> {
    let query = selectEventRows(this.db).where('status', '=', 'processed').where('created_at', '<', cutoff);
    if (after) {
      query = query.where((eb) => eb.or([eb('created_at', '>', after.createdAt), eb.and([eb('created_at', '=', after.createdAt), eb('id', '>', after.id)])]));
    }
    const rows = await query.orderBy('created_at').orderBy('id').limit(limit).execute();
    const day = rows[0]?.created_at.slice(0, 10);
    return rows.filter((row) => row.created_at.slice(0, 10) === day);
  }

  private async write(archive: Archive, manifest: Manifest, rows: EventRow[]): Promise<ArchivePart> {
    const day = rows[0]!.created_at.slice(0, 10);
    const sequence = manifest.parts.filter((p) => p.day === day).length + 1;
    const file = `${day}.${String(sequence).padStart(4, '0')}.jsonl.gz`;
    // A file left by a killed run under this name was never in the manifest: it is overwritten.
    const written = await writeArchiveFile(archive, file, rows.map(archiveLine));
    const ids = rows.map((row) => Number(row.id));
    const part: ArchivePart = {
      file,
      day,
      events: rows.length,
      ...written,
      firstId: Math.min(...ids),
      lastId: Math.max(...ids),
      writtenAt: this.clock.now().toISOString(),
      state: 'written',
    };
    manifest.parts.push(part);
    await saveManifest(archive.storage, manifest);
    return part;
  }

  /** Reads the file back, and for each batch of lines deletes the rows that still match them exactly. */
  private async settle(options: ArchiveOptions, manifest: Manifest, part: ArchivePart): Promise<SettledPart> {
    const lines = await readArchiveLines(options.archive, part);
    if (lines.length !== part.events) throw new Error(`${part.file} holds ${lines.length} events, its manifest entry says ${part.events}`);
    const batchSize = options.deleteBatchSize ?? DEFAULT_DELETE_BATCH;
    let deleted = 0;
    let kept = 0;
    for (let start = 0; start < lines.length; start += batchSize) {
      const batch = new Map(lines.slice(start, start + batchSize).map((line) => [(JSON.parse(line) as { id: number }).id, line]));
      const rows = await selectEventRows(this.db)
        .where('id', 'in', [...batch.keys()])
        .execute();
      const verified = rows.filter((row) => row.status === 'processed' && archiveLine(row) === batch.get(Number(row.id)));
      kept += rows.length - verified.length;
      if (verified.length === 0) continue;
      const removed = await this.store.removeArchivedEvents(verified, part.file);
      deleted += removed;
      kept += verified.length - removed;
    }
    part.state = 'complete';
    part.kept = kept;
    part.completedAt = this.clock.now().toISOString();
    await saveManifest(options.archive.storage, manifest);
    return { file: part.file, day: part.day, events: part.events, bytes: part.bytes, sha256: part.sha256, deleted, kept };
  }
}
