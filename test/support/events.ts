import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Insertable, Kysely } from 'kysely';
import { toDbTime, type InboxDatabase, type WebhookEventBodiesTable, type WebhookEventsTable } from '../../src/db/schema.js';

export type SeededEvent = Partial<Insertable<WebhookEventsTable>> & Partial<Pick<WebhookEventBodiesTable, 'payload' | 'headers'>> & { event_id: string };

/** Writes events (rows and bodies) directly, in any state and at any age, for the operator tools to find. */
export async function seedEvents(db: Kysely<InboxDatabase>, rows: SeededEvent[]): Promise<void> {
  const now = toDbTime(new Date());
  const defaults = { provider: 'stripe', event_type: 'payment_intent.succeeded', status: 'processed' as const, attempts: 1, created_at: now };
  const key = (provider: string, eventId: string) => `${provider}\u0000${eventId}`;
  for (let start = 0; start < rows.length; start += 500) {
    const chunk = rows.slice(start, start + 500).map(({ payload = '{}', headers = '{}', ...row }) => ({ row: { ...defaults, ...row }, payload, headers }));
    await db.transaction().execute(async (tx) => {
      await tx
        .insertInto('webhook_events')
        .values(chunk.map(({ row }) => row))
        .execute();
      const stored = await tx
        .selectFrom('webhook_events')
        .select(['id', 'provider', 'event_id'])
        .where(
          'event_id',
          'in',
          chunk.map(({ row }) => row.event_id),
        )
        .execute();
      const ids = new Map(stored.map((row) => [key(row.provider, row.event_id), row.id]));
      await tx
        .insertInto('webhook_event_bodies')
        .values(chunk.map(({ row, payload, headers }) => ({ event_row_id: ids.get(key(row.provider, row.event_id))!, payload, headers })))
        .execute();
    });
  }
}

export function minutesAgo(minutes: number): string {
  return toDbTime(new Date(Date.now() - minutes * 60_000));
}

/** A local HTTP endpoint that records the JSON bodies posted to it (an alert webhook stand-in). */
export async function startSink(): Promise<{ url: string; bodies: unknown[]; close: () => Promise<void> }> {
  const bodies: unknown[] = [];
  const server: Server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString()));
    request.on('end', () => {
      bodies.push(JSON.parse(text));
      response.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/alerts`, bodies, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
