/**
 * One error family for the whole service. Each error carries a stable `code` (for logs, metrics and
 * API clients) and the HTTP status it maps to; the mapping to responses lives in `http/errors.ts`.
 */
export class InboxError extends Error {
  readonly code: string;
  readonly statusCode: number;

  constructor(code: string, statusCode: number, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    this.statusCode = statusCode;
  }
}

/** The delivery failed authentication: missing, malformed, stale or wrong signature. Nothing is written. */
export class SignatureError extends InboxError {
  constructor(message: string) {
    super('invalid_signature', 401, message);
  }
}

/** The delivery is authentic (or could not be judged) but unusable: unreadable body, missing event id. */
export class BadRequestError extends InboxError {
  constructor(message: string, code = 'bad_request') {
    super(code, 400, message);
  }
}

export class UnsupportedMediaTypeError extends InboxError {
  constructor(message: string) {
    super('unsupported_media_type', 415, message);
  }
}

export class UnknownProviderError extends InboxError {
  constructor(provider: string) {
    super('unknown_provider', 404, `unknown provider "${provider}"; use stripe, razorpay or payu`);
  }
}

/** The provider has no secret configured: fail closed rather than accept unverifiable deliveries. */
export class ProviderNotConfiguredError extends InboxError {
  constructor(provider: string, variables: string[]) {
    super('provider_not_configured', 503, `${provider} webhooks are not configured: set ${variables.join(' and ')}`);
  }
}

/** The store could not be reached; the provider should retry later. */
export class StoreUnavailableError extends InboxError {
  constructor(message: string, options?: ErrorOptions) {
    super('store_unavailable', 503, message, options);
  }
}

/**
 * The database neither stored the event's row nor holds one for its key: it dropped the insert without
 * an error, as INSERT IGNORE does with any row error. MariaDB with innodb_autoinc_lock_mode=2 (which
 * Galera requires) does so under concurrent INSERT ... SELECT, when it hands out an id already taken.
 * The record is tried again; if the row still is not there, the provider should retry. Also: the
 * database stored the payload with another size than was received, and the row could not be taken
 * back; the delivery is not acknowledged.
 */
export class RecordNotStoredError extends InboxError {
  constructor(message: string) {
    super('record_not_stored', 503, message);
  }
}

/** Inline mode: the event is recorded but its processing has not finished yet; the provider should retry. */
export class ProcessingPendingError extends InboxError {
  constructor(message: string) {
    super('processing_pending', 503, message);
  }
}

export class ConfigError extends InboxError {
  readonly problems: string[];

  constructor(problems: string[]) {
    super('invalid_config', 500, `invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.problems = problems;
  }
}

/**
 * Thrown inside a processing transaction when the worker's lease is no longer valid (expired or taken
 * over). The transaction rolls back, so a stale worker can never commit business effects.
 */
export class LeaseLostError extends InboxError {
  constructor(eventId: number) {
    super('lease_lost', 409, `lease on event ${eventId} expired or was taken over; changes rolled back`);
  }
}

/** A handler asks for a later retry (e.g. a dependency is down), optionally after a specific delay. */
export class RetryLaterError extends InboxError {
  readonly retryAfterMs: number | undefined;

  constructor(message: string, retryAfterMs?: number) {
    super('retry_later', 503, message);
    this.retryAfterMs = retryAfterMs;
  }
}

/** A handler declares the event unprocessable: no automatic retry, an operator must look at it. */
export class PermanentError extends InboxError {
  constructor(message: string) {
    super('permanent_failure', 422, message);
  }
}

/**
 * An error's message followed by its causes', e.g. "fetch failed: connect ECONNREFUSED 127.0.0.1:9":
 * fetch, undici and the database drivers put the reason in `cause`. A cause the text already says is
 * left out, and an AggregateError without a message (a connection tried on several addresses) says
 * what each attempt met. Used wherever an error leaves the code: stored errors, logs, CLI output.
 */
export function describeError(error: unknown): string {
  const parts: string[] = [];
  const seen = new Set<unknown>();
  for (let current = error; current !== undefined && current !== null && !seen.has(current); current = causeOf(current)) {
    seen.add(current);
    const text = ownText(current);
    if (text !== '' && !parts.some((part) => part.includes(text))) parts.push(text);
  }
  return parts.join(': ') || String(error);
}

function causeOf(error: unknown): unknown {
  return error instanceof Error ? error.cause : undefined;
}

function ownText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error.message !== '') return error.message;
  if (error instanceof AggregateError && error.errors.length > 0) return [...new Set(error.errors.map(describeError))].join('; ');
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : error.name;
}
