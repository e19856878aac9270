/** The service's settings, as read and validated from the environment by load.ts. */

/** One key of ARCHIVE_ENCRYPTION_KEY (see config/archive-keys.ts). */
export interface ArchiveKey {
  /** Written in each file's header and its manifest entry: which key a file needs. */
  id: string;
  /** The 32 bytes of the AES-256 key, base64 (kept as text: the configuration is plain data). */
  secret: string;
}

export type ProcessingMode = 'background' | 'inline';

export interface StripeSettings {
  /** Every configured endpoint secret; during a roll both the old and the new one are accepted. */
  secrets: string[];
  toleranceSeconds: number;
}

export interface RazorpaySettings {
  secrets: string[];
}

export interface PayuSettings {
  merchantKey: string;
  merchantSalt: string;
}

/** Which providers are configured; a provider left `null` answers 503 (fails closed). */
export interface ProviderSettings {
  stripe: StripeSettings | null;
  razorpay: RazorpaySettings | null;
  payu: PayuSettings | null;
}

export interface ProcessingSettings {
  mode: ProcessingMode;
  leaseMs: number;
  concurrency: number;
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  sweepIntervalMs: number;
  /** Background mode: how long a claim or a completion waits for others to share its transaction (WORKER_BATCH_WAIT_MS). */
  batchWaitMs: number;
  /**
   * `serve` in background mode: the workers run in a thread of their own (WORKER_THREAD), at a lower
   * CPU priority (WORKER_NICE, 0 for the same), so processing never holds up an acknowledgement.
   */
  thread: {
    enabled: boolean;
    nice: number;
    /**
     * Acknowledgements first: while deliveries queue at a busy request thread, the workers' thread
     * yields to it. Busy: its event loop busier than `yieldUtilisation` (0 to 1; WORKER_YIELD_ELU, 1
     * never yields); queueing: at least `yieldInFlight` deliveries waiting for their answer on average
     * (WORKER_YIELD_IN_FLIGHT, 0: the loop alone decides).
     */
    yieldUtilisation: number;
    yieldInFlight: number;
  };
  /** How many workers run while they yield (WORKER_YIELD_CONCURRENCY): so that processing never stops. */
  yieldConcurrency: number;
  inlineWaitMs: number;
  /** How long a delivery waits for its database insert before the answer is a 503. */
  recordTimeoutMs: number;
}

/** Set: the Redis Streams transport; null: in-process. */
export interface RedisSettings {
  url: string;
  stream: string;
}

/** The providers' APIs that reconciliation asks; a provider left `null` is not reconciled (its key is missing). */
export interface ReconcileApis {
  /** STRIPE_API_KEY: a restricted key that reads events. */
  stripe: { apiKey: string; apiBase: string } | null;
  /** RAZORPAY_KEY_ID and RAZORPAY_KEY_SECRET, sent as basic auth. */
  razorpay: { keyId: string; keySecret: string; apiBase: string } | null;
  /** The merchant key and salt of the PayU callbacks (PAYU_MERCHANT_KEY, PAYU_MERCHANT_SALT). */
  payu: { merchantKey: string; merchantSalt: string; apiBase: string } | null;
}

/** `webhook-inbox reconcile` and its schedule. */
export interface ReconcileSettings {
  apis: ReconcileApis;
  /** Cron expression (UTC) of the scheduled run, or null (off). */
  cron: string | null;
  /** How far back a scheduled run looks. */
  windowMs: number;
  /** Pages asked of one provider's list endpoint in one run, at most: an API that pages forever is cut off. */
  maxPages: number;
  /** Provider API calls in flight at once. */
  concurrency: number;
  /** A PayU payment held in a non-final state for longer than this is verified with PayU. */
  payuPendingOlderThanMs: number;
}

/** Rules that know how providers fail (docs/operations.md, Alerts). */
export interface ProviderAlertSettings {
  /** Cron expression (UTC) of the check of these rules, or null (off). */
  cron: string | null;
  /** Alert when a provider was answered only non-2xx for longer than this. */
  non2xxForMs: number;
  /** Alert when a provider's share of signature failures in the last hour is above this... */
  signatureFailureShare: number;
  /** ... and there were at least this many of them. */
  signatureFailureMinCount: number;
  /** Alert when no event came from a provider for this long; null: off. */
  providerSilentForMs: number | null;
}

/** Scheduled operator jobs (cron expressions in UTC; null = off) and where alerts go. */
export interface OperationsSettings {
  alertWebhookUrl: string | null;
  reconcile: ReconcileSettings;
  alerts: ProviderAlertSettings;
  /** olderThanMs: for received events; outboxOlderThanMs: for pending outbox rows. */
  stuckCheck: { cron: string | null; olderThanMs: number; outboxOlderThanMs: number };
  /** `to`: where archives go, ARCHIVE_TO (or ARCHIVE_DIR): a directory or s3://bucket/prefix (see archive-location.ts). */
  archive: {
    cron: string | null;
    to: string | null;
    olderThanMs: number;
    /** ARCHIVE_ENCRYPTION_KEY: the first encrypts new files, all decrypt; empty: files are written unencrypted. */
    keys: ArchiveKey[];
    s3: ArchiveS3Settings;
  };
}

/**
 * How an `s3://` archive reaches its object store (read whatever the location, since `archive --to`
 * may name one). Credentials are the SDK's own default chain, never settings of ours.
 */
export interface ArchiveS3Settings {
  /** AWS_REGION; us-east-1 when unset. */
  region: string;
  /** S3_ENDPOINT: an S3-compatible store (MinIO, R2, GCS interoperability); null for AWS itself. */
  endpointUrl: string | null;
  /** S3_FORCE_PATH_STYLE: `endpoint/bucket/key` rather than `bucket.endpoint/key`, as MinIO and most S3-compatible stores want. */
  forcePathStyle: boolean;
  /** ARCHIVE_STORAGE_CLASS of the archive files (not the manifest); null: the bucket's default. */
  storageClass: string | null;
}

/**
 * The mail server (SMTP_URL): the engine's transport for e-mail, which a domain sends its messages
 * through (receipts, say, with a sender of the domain's own settings).
 */
export interface SmtpSettings {
  /** smtp:// or smtps:// with credentials; never logged. */
  url: string;
  timeoutMs: number;
}

/** How side effects leave: a domain's transports take what they need of these. */
export interface OutboxSettings {
  /** Deliveries in flight at once (each an SMTP or HTTP call), per process. */
  concurrency: number;
  smtp: SmtpSettings | null;
}

/** Where payment transitions (and, if asked, every verified event) are forwarded, signed. */
export interface ForwardSettings {
  url: string;
  /** Standard Webhooks secrets (`whsec_` and base64); each delivery carries a signature for each. */
  secrets: string[];
  timeoutMs: number;
  /** Forward each verified provider event too, not only the payment transitions. */
  rawEvents: boolean;
}

/** Bounds on how long the HTTP server waits for a client (slow or stalled requests, idle connections). */
export interface HttpSettings {
  /** From the first byte of a request to the end of its headers. */
  headersTimeoutMs: number;
  /** From the first byte of a request to the end of its body. */
  requestTimeoutMs: number;
  /** A keep-alive connection with no request in flight. */
  idleTimeoutMs: number;
}

/** viewer: reads everything; operator: may also replay events and retry outbox rows. */
export type AdminRole = 'viewer' | 'operator';

/** One named credential of ADMIN_TOKENS. */
export interface AdminToken {
  name: string;
  role: AdminRole;
  token: string;
}

/** Who may use /admin, and how they prove it; null (the default) turns /admin off. */
export interface AdminSettings {
  /** tokens: ADMIN_TOKENS only; proxy: a trusted proxy names the user (ADMIN_PROXY_HEADER), tokens still work for the API. */
  auth: 'tokens' | 'proxy';
  tokens: AdminToken[];
  sessionTtlMs: number;
  /** Refused tokens a client address may present within `windowMs` before every token from it is refused (429) until the window has passed. */
  signInLimit: { failures: number; windowMs: number };
  /** Lower-case header name the trusted proxy sets to the signed-in user (proxy auth only). */
  proxyHeader: string | null;
  /** In order, first match wins; user `*` matches anyone the proxy names. */
  proxyRoles: Array<{ user: string; role: AdminRole }>;
}

/**
 * Where /metrics, /readyz and /admin are served apart from the webhooks (MANAGEMENT_HOST,
 * MANAGEMENT_PORT), so that the public port answers only providers and liveness probes.
 */
export interface ManagementSettings {
  host: string;
  port: number;
}

export interface Config {
  host: string;
  port: number;
  /** Null: one listener (HOST, PORT) serves every route. */
  management: ManagementSettings | null;
  databaseUrl: string;
  dbPoolSize: number;
  /** Connections that record deliveries, a group-commit batch at a time on each (MySQL). */
  dbRecordConnections: number;
  migrateOnStart: boolean;
  bodyLimitBytes: number;
  /** PayU's own body limit: its callbacks are a few KB, and must be parsed before they can be verified. */
  payuBodyLimitBytes: number;
  http: HttpSettings;
  logLevel: string;
  shutdownTimeoutMs: number;
  /** V8's old-generation growth after each full collection, in percent; 0 leaves V8 its own factor. */
  heapGrowthPercent: number;
  providers: ProviderSettings;
  processing: ProcessingSettings;
  redis: RedisSettings | null;
  operations: OperationsSettings;
  outbox: OutboxSettings;
  /**
   * Each domain's own settings, by its name, as its `settings` hook read them with the rest
   * (loadConfig's `domains`). Plain data, so that the configuration can be handed to a thread.
   */
  domainSettings: Readonly<Record<string, unknown>>;
  /** Null: nothing is forwarded. */
  forward: ForwardSettings | null;
  /** Addresses (IPs or CIDR ranges) of the reverse proxies whose X-Forwarded-* headers are believed. */
  trustProxy: string[];
  /** Null: /admin is off (it answers 404). */
  admin: AdminSettings | null;
}
