import { connect } from 'node:net';

/** What a client on a raw socket saw: the bytes answered, a socket error, and whether and when the server closed. */
export interface RawExchange {
  /** Everything the server sent, as latin1 text. */
  text: string;
  status: number | null;
  /** Header names lower-cased; the first answer's. */
  headers: Record<string, string>;
  /** A write or socket error the client met (EPIPE, ECONNRESET), if any. */
  error: string | null;
  /** Milliseconds from connecting to the server closing the connection; null if it was still open when the client gave up. */
  closedAfterMs: number | null;
}

export interface RawRequest {
  /** Written at once. */
  head: string | Buffer;
  /** Written after `head`, `chunkBytes` at a time, one chunk every `everyMs`. */
  body?: Buffer;
  chunkBytes?: number;
  everyMs?: number;
  /** How long the client waits for the server to close before it closes itself. */
  waitMs: number;
}

/**
 * Speaks HTTP/1.1 over a bare socket: partial, slow, oversized or malformed requests that no HTTP
 * client would send, and what the server does with the connection afterwards.
 */
export function rawExchange(baseUrl: string, request: RawRequest): Promise<RawExchange> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = connect(Number(port), hostname);
    const received: Buffer[] = [];
    let error: string | null = null;
    let closedAfterMs: number | null = null;
    let writer: NodeJS.Timeout | undefined = undefined;
    const giveUp = setTimeout(() => socket.destroy(), request.waitMs);
    const noteError = (e: Error | null | undefined) => {
      if (e && error === null) error = (e as NodeJS.ErrnoException).code ?? e.message;
    };
    socket.on('data', (chunk) => received.push(chunk));
    socket.on('error', noteError);
    socket.on('end', () => (closedAfterMs ??= Math.round(performance.now() - started)));
    socket.on('close', () => {
      clearTimeout(giveUp);
      clearInterval(writer);
      const text = Buffer.concat(received).toString('latin1');
      resolve({ text, ...parseHead(text), error, closedAfterMs });
    });
    socket.write(request.head, noteError);
    const body = request.body;
    if (!body) return;
    if (!request.everyMs) {
      socket.write(body, noteError);
      return;
    }
    let offset = 0;
    writer = setInterval(() => {
      if (offset >= body.length || socket.destroyed) return clearInterval(writer);
      socket.write(body.subarray(offset, offset + (request.chunkBytes ?? 1)), noteError);
      offset += request.chunkBytes ?? 1;
    }, request.everyMs);
  });
}

function parseHead(text: string): { status: number | null; headers: Record<string, string> } {
  const [head = ''] = text.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const status = /^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1];
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] ??= line.slice(colon + 1).trim();
  }
  return { status: status === undefined ? null : Number(status), headers };
}

/** A request head with `headers`, ending the header block. */
export function requestHead(method: string, path: string, headers: Record<string, string | number>): string {
  return `${method} ${path} HTTP/1.1\r\nHost: inbox.test\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}\r\n`;
}
