import { createServer, request, type IncomingMessage } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';

/** An S3 error answer: status and code, as the store would send them. */
export interface Refusal {
  status: number;
  code: string;
}

export interface RefusingS3Proxy {
  endpoint: string;
  /** Requests refused so far, as `METHOD path?query`. */
  refused: string[];
  close(): Promise<void>;
}

/**
 * An HTTP forwarder in front of a test S3 server that answers some requests itself with an S3
 * error, as a store failing half-way would: a file's PUT refused, or one part of a multipart upload.
 * Everything else reaches the server unchanged (the Host header too, which the signature covers).
 */
export async function startRefusingS3Proxy(target: string, refuse: (request: IncomingMessage) => Refusal | null): Promise<RefusingS3Proxy> {
  const upstream = new URL(target);
  const refused: string[] = [];
  const server = createServer((incoming, outgoing) => {
    const refusal = refuse(incoming);
    if (refusal) {
      refused.push(`${incoming.method} ${incoming.url}`);
      incoming.resume();
      incoming.on('end', () => {
        outgoing.writeHead(refusal.status, { 'content-type': 'application/xml', connection: 'close' });
        outgoing.end(`<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${refusal.code}</Code><Message>refused by the test proxy</Message></Error>`);
      });
      return;
    }
    const forwarded = request({ host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url, headers: incoming.headers }, (answer) => {
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(outgoing);
    });
    forwarded.on('error', () => outgoing.destroy());
    incoming.pipe(forwarded);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    refused,
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
