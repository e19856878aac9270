import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

/**
 * The downstream systems the outbox talks to, as real servers on loopback: an SMTP server that keeps
 * every accepted message, and an HTTP service (a fulfilment API, the target of forwarded events) that
 * deduplicates by key the way a well-behaved receiver does. Tests script their failures.
 */

export interface ReceivedMail {
  messageId: string;
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string;
}

/** What the SMTP server does with the message it just read (parsed and recorded in `received` first). */
export type MailVerdict = 'accept' | 'hold' | { reject: number };

export interface SmtpDownstream {
  url: string;
  /** Accepted messages (a rejected one is not a delivery). */
  accepted: ReceivedMail[];
  /** Every message that reached the end of DATA, accepted or not. */
  received: ReceivedMail[];
  logins: string[];
  verdict: (mail: ReceivedMail, index: number) => MailVerdict;
  close(): Promise<void>;
}

export const SMTP_USER = 'mailer';
export const SMTP_PASSWORD = 'smtp-test-password';

export async function startSmtpServer(): Promise<SmtpDownstream> {
  const held: Array<() => void> = [];
  const downstream: SmtpDownstream = {
    url: '',
    accepted: [],
    received: [],
    logins: [],
    verdict: () => 'accept',
    async close() {
      for (const release of held.splice(0)) release();
      await new Promise<void>((resolve) => server.close(resolve));
    },
  };
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username !== SMTP_USER || auth.password !== SMTP_PASSWORD) return callback(new Error('bad credentials'));
      downstream.logins.push(auth.username ?? '');
      callback(null, { user: auth.username });
    },
    onData(stream, _session, callback) {
      simpleParser(stream).then((parsed) => {
        const mail: ReceivedMail = {
          messageId: parsed.messageId ?? '',
          from: parsed.from?.text ?? '',
          to: (Array.isArray(parsed.to) ? parsed.to[0] : parsed.to)?.text ?? '',
          subject: parsed.subject ?? '',
          text: parsed.text ?? '',
          html: typeof parsed.html === 'string' ? parsed.html : '',
        };
        downstream.received.push(mail);
        const verdict = downstream.verdict(mail, downstream.received.length - 1);
        if (verdict === 'hold') {
          // Taken (the mail goes on), but the answer never comes while the test runs: the sender
          // crashes or times out waiting, as if it died right after the server said 250.
          downstream.accepted.push(mail);
          held.push(() => callback(Object.assign(new Error('closing'), { responseCode: 421 })));
        } else if (verdict === 'accept') {
          downstream.accepted.push(mail);
          callback();
        } else {
          callback(Object.assign(new Error(`rejected by the test (${verdict.reject})`), { responseCode: verdict.reject }));
        }
      }, callback);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  downstream.url = `smtp://${SMTP_USER}:${SMTP_PASSWORD}@127.0.0.1:${port}`;
  return downstream;
}

export interface HttpCall {
  /** Idempotency-Key, or for a Standard Webhooks delivery its webhook-id. */
  key: string | undefined;
  headers: IncomingHttpHeaders;
  /** The body as sent, byte for byte (signatures are over it). */
  text: string;
  body: Record<string, unknown>;
  path: string;
  /** When the call arrived and when it was answered (performance.now()); no answer yet: undefined. */
  startedAt: number;
  answeredAt?: number;
}

/**
 * The answer to a call: a status (and body, headers), after `delayMs` if given; or `hang` (no answer
 * until the server closes).
 */
export type HttpAnswer = { status: number; body?: unknown; headers?: Record<string, string>; delayMs?: number } | 'hang';

export interface HttpDownstream {
  /** The URL to configure (its path is /fulfilments, or the one asked for). */
  url: string;
  calls: HttpCall[];
  /** Keys whose work was done: a later call with one of them answers 409. */
  done: Set<string>;
  /**
   * Scripted answer for a call (index counts every call), or undefined for the well-behaved default:
   * 200 and remember the key, or 409 when the key was done already. A hung call does the work first:
   * only its answer is lost.
   */
  script: (call: HttpCall, index: number) => HttpAnswer | undefined;
  distinctKeys(): Set<string>;
  close(): Promise<void>;
}

/**
 * An HTTP service on loopback that records every call: a fulfilment API (Idempotency-Key), or the
 * team's own service that forwarded events are delivered to (webhook-id).
 */
export async function startHttpDownstream(path = '/fulfilments'): Promise<HttpDownstream> {
  const hung: ServerResponse[] = [];
  const downstream: HttpDownstream = {
    url: '',
    calls: [],
    done: new Set(),
    script: () => undefined,
    distinctKeys: () => new Set(downstream.calls.map((c) => c.key ?? '')),
    async close() {
      for (const response of hung.splice(0)) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const respond = async (request: IncomingMessage, response: ServerResponse) => {
    const startedAt = performance.now();
    let text = '';
    for await (const chunk of request) text += chunk;
    const header = request.headers['idempotency-key'] ?? request.headers['webhook-id'];
    const call: HttpCall = {
      key: Array.isArray(header) ? header[0] : header,
      headers: request.headers,
      text,
      body: JSON.parse(text) as Record<string, unknown>,
      path: request.url ?? '',
      startedAt,
    };
    downstream.calls.push(call);
    const scripted = downstream.script(call, downstream.calls.length - 1);
    if (scripted === 'hang') {
      if (call.key) downstream.done.add(call.key);
      hung.push(response);
      return;
    }
    const answer = scripted ?? (call.key && downstream.done.has(call.key) ? { status: 409, body: { error: 'already processed' } } : { status: 200, body: { ok: true } });
    if (answer.delayMs) await new Promise((resolve) => setTimeout(resolve, answer.delayMs));
    if (answer.status >= 200 && answer.status < 300 && call.key) downstream.done.add(call.key);
    call.answeredAt = performance.now();
    response.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
    response.end(JSON.stringify(answer.body ?? {}));
  };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => void respond(request, response));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  downstream.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  return downstream;
}
