import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TEST_SECRETS } from './signing.js';

/**
 * Local stand-ins for the providers' APIs that reconciliation reads, written from their documentation
 * (not from src/): Stripe's `GET /v1/events` (list object, newest first, `created[gte|lte]`, `types[]`,
 * `starting_after`, `limit`), Razorpay's `GET /v1/payments`, `/v1/payments/:id` and `/v1/refunds`
 * (collection, `from`/`to`/`count`/`skip`, basic auth), PayU's post-service `verify_payment` (form post,
 * hash sha512(key|command|var1|salt), `transaction_details` by txnid).
 */

export const FAKE_KEYS = { stripe: 'rk_test_reconcile_0123456789', razorpayId: 'rzp_test_keyid', razorpaySecret: 'rzp_test_keysecret' };

/** What the next matching requests get instead of an answer. */
export type Fault =
  | { kind: 'status'; status: number; retryAfter?: string; body?: string }
  | { kind: 'malformed' }
  | { kind: 'truncated' }
  | { kind: 'oversized'; bytes: number }
  | { kind: 'endless' };

export interface StripeApiEvent {
  id: string;
  object: 'event';
  type: string;
  created: number;
  data: { object: Record<string, unknown> };
}

export interface RazorpayApiPayment extends Record<string, unknown> {
  id: string;
  entity: 'payment';
  amount: number;
  currency: string;
  status: string;
  amount_refunded: number;
  created_at: number;
}

export interface RazorpayApiRefund extends Record<string, unknown> {
  id: string;
  entity: 'refund';
  payment_id: string;
  amount: number;
  status: string;
  created_at: number;
}

export class FakeProviderApis {
  readonly stripeEvents: StripeApiEvent[] = [];
  readonly razorpayPayments: RazorpayApiPayment[] = [];
  readonly razorpayRefunds: RazorpayApiRefund[] = [];
  /** PayU transactions by txnid, as verify_payment details them. */
  readonly payuTransactions = new Map<string, Record<string, string>>();
  /**
   * Items answered whatever the query asks, as an API with a fault (or someone between it and the
   * inbox) might: added to the first page of their listing, past its filters on type and time.
   */
  readonly unasked = { stripeEvents: [] as StripeApiEvent[], razorpayPayments: [] as RazorpayApiPayment[], razorpayRefunds: [] as RazorpayApiRefund[] };
  /** What `GET /v1/payments/:id` answers for an id, in place of the payment asked for. */
  readonly razorpayImpostors = new Map<string, RazorpayApiPayment>();
  /** Faults by path prefix ('/v1/events', '/v1/payments', '/merchant'), each used once. */
  readonly faults: Array<{ path: string; fault: Fault }> = [];
  /**
   * Events per page of `GET /v1/events`, at most: below `limit`, a client must still follow has_more.
   */
  stripePageSize = 100;
  /** Every request: method, path and query, and the status answered. */
  readonly requests: Array<{ path: string; query: string; status: number }> = [];

  private constructor(
    private readonly server: ReturnType<typeof createServer>,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeProviderApis> {
    const handlers: { apis?: FakeProviderApis } = {};
    const server = createServer((request, response) => {
      void handlers.apis!.handle(request, response);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    handlers.apis = new FakeProviderApis(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return handlers.apis;
  }

  /** The env that points the inbox at these fakes, with their credentials. */
  env(): Record<string, string> {
    return {
      STRIPE_API_KEY: FAKE_KEYS.stripe,
      STRIPE_API_BASE: this.url,
      RAZORPAY_KEY_ID: FAKE_KEYS.razorpayId,
      RAZORPAY_KEY_SECRET: FAKE_KEYS.razorpaySecret,
      RAZORPAY_API_BASE: this.url,
      PAYU_API_BASE: this.url,
    };
  }

  fail(path: string, fault: Fault, times = 1): void {
    for (let i = 0; i < times; i++) this.faults.push({ path, fault });
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', this.url);
    const body = await new Promise<string>((resolve) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    });
    const send = (status: number, json: unknown, headers: Record<string, string> = {}) => {
      this.requests.push({ path: url.pathname, query: url.search, status });
      response.writeHead(status, { 'content-type': 'application/json', ...headers });
      response.end(JSON.stringify(json));
    };
    const faultIndex = this.faults.findIndex((f) => url.pathname.startsWith(f.path));
    if (faultIndex >= 0) {
      const { fault } = this.faults.splice(faultIndex, 1)[0]!;
      this.requests.push({ path: url.pathname, query: url.search, status: fault.kind === 'status' ? fault.status : 200 });
      if (fault.kind === 'status') {
        response.writeHead(fault.status, { 'content-type': 'application/json', ...(fault.retryAfter ? { 'retry-after': fault.retryAfter } : {}) });
        response.end(fault.body ?? JSON.stringify({ error: { code: 'SERVER_ERROR', description: 'fake fault' } }));
      } else if (fault.kind === 'malformed') {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('{"object": "list", "data": [');
      } else if (fault.kind === 'truncated') {
        // Declares more than it sends, then drops the connection.
        response.writeHead(200, { 'content-type': 'application/json', 'content-length': '5000' });
        response.write('{"object":"list","data":[{"id":"evt_');
        response.socket?.destroy();
      } else if (fault.kind === 'oversized') {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(`{"object":"list","has_more":false,"data":[],"pad":"${'x'.repeat(fault.bytes)}"}`);
      } else {
        // A page that always says there is more, continuing after an event that never ends the list.
        this.faults.push({ path: url.pathname, fault });
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({
            object: 'list',
            url: '/v1/events',
            has_more: true,
            data: [this.stripeEvents[0] ?? { id: 'evt_loop', object: 'event', type: 'payment_intent.created', created: 0, data: { object: {} } }],
          }),
        );
      }
      return;
    }

    if (url.pathname === '/v1/events') {
      if (request.headers.authorization !== `Bearer ${FAKE_KEYS.stripe}`) return send(401, { error: { type: 'invalid_request_error', message: 'Invalid API Key provided' } });
      return send(200, this.listStripeEvents(url.searchParams));
    }
    if (url.pathname.startsWith('/v1/payments') || url.pathname === '/v1/refunds') {
      const expected = `Basic ${Buffer.from(`${FAKE_KEYS.razorpayId}:${FAKE_KEYS.razorpaySecret}`).toString('base64')}`;
      if (request.headers.authorization !== expected) return send(401, { error: { code: 'BAD_REQUEST_ERROR', description: 'The api key provided is invalid' } });
      const one = /^\/v1\/payments\/([^/]+)$/.exec(url.pathname);
      if (one) {
        const id = decodeURIComponent(one[1]!);
        const payment = this.razorpayImpostors.get(id) ?? this.razorpayPayments.find((p) => p.id === id);
        return payment ? send(200, payment) : send(400, { error: { code: 'BAD_REQUEST_ERROR', description: 'The id provided does not exist' } });
      }
      return send(
        200,
        url.pathname === '/v1/refunds'
          ? collection(this.razorpayRefunds, url.searchParams, this.unasked.razorpayRefunds)
          : collection(this.razorpayPayments, url.searchParams, this.unasked.razorpayPayments),
      );
    }
    if (url.pathname === '/merchant/postservice.php' && request.method === 'POST') {
      const form = new URLSearchParams(body);
      const field = (name: string) => form.get(name) ?? '';
      const [key, command, var1, hash] = [field('key'), field('command'), field('var1'), field('hash')];
      const expected = createHash('sha512').update(`${key}|${command}|${var1}|${TEST_SECRETS.payuSalt}`).digest('hex');
      if (key !== TEST_SECRETS.payuKey || hash !== expected || command !== 'verify_payment') return send(200, { status: 0, msg: 'Invalid Hash.' });
      const details = Object.fromEntries(var1.split('|').map((txnid) => [txnid, this.payuTransactions.get(txnid) ?? { status: 'Not Found' }]));
      const found = var1.split('|').filter((txnid) => this.payuTransactions.has(txnid)).length;
      return send(200, { status: 1, msg: `${found} out of ${var1.split('|').length} Transactions Fetched Successfully`, transaction_details: details });
    }
    send(404, { error: 'not found' });
  }

  private listStripeEvents(query: URLSearchParams) {
    const gte = Number(query.get('created[gte]') ?? 0);
    const lte = Number(query.get('created[lte]') ?? Number.MAX_SAFE_INTEGER);
    const types = query.getAll('types[]');
    const limit = Math.min(this.stripePageSize, Number(query.get('limit') ?? 10));
    const matching = this.stripeEvents
      .filter((e) => e.created >= gte && e.created <= lte && (types.length === 0 || types.includes(e.type)))
      .sort((a, b) => b.created - a.created || (a.id < b.id ? 1 : -1));
    const after = query.get('starting_after');
    const start = after ? matching.findIndex((e) => e.id === after) + 1 : 0;
    const data = [...matching.slice(start, start + limit), ...(start === 0 ? this.unasked.stripeEvents : [])];
    return { object: 'list', url: '/v1/events', has_more: start + limit < matching.length, data };
  }
}

function collection<T extends { created_at: number }>(items: T[], query: URLSearchParams, unasked: T[]) {
  const from = Number(query.get('from') ?? 0);
  const to = Number(query.get('to') ?? Number.MAX_SAFE_INTEGER);
  const count = Math.min(100, Number(query.get('count') ?? 10));
  const skip = Number(query.get('skip') ?? 0);
  const matching = items.filter((item) => item.created_at >= from && item.created_at <= to).sort((a, b) => b.created_at - a.created_at);
  const page = [...matching.slice(skip, skip + count), ...(skip === 0 ? unasked : [])];
  return { entity: 'collection', count: page.length, items: page };
}
