import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Insertable, Kysely } from 'kysely';
import { toDbTime, type InboxDatabase, type WebhookEventsTable } from '../../src/db/schema.js';

/** Writes event rows directly, in any state and at any age, for the operator tools to find. */
export async function seedEvents(db: Kysely<InboxDatabase>, rows: Array<Partial<Insertable<WebhookEventsTable>> & { event_id: string }>): Promise<void> {
  const now = toDbTime(new Date());
  const defaults = { provider: 'stripe', event_type: 'payment_intent.succeeded', payload: '{}', headers: '{}', status: 'processed' as const, attempts: 1, created_at: now };
  for (let start = 0; start < rows.length; start += 500) {
    await db
      .insertInto('webhook_events')
      .values(rows.slice(start, start + 500).map((row) => ({ ...defaults, ...row })))
      .execute();
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
