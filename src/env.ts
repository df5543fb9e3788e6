// Bindings and vars of the Worker (wrangler.toml), and the messages of its queues.
// Declarations only, at the bottom of the Worker's layers: it imports nothing but the
// schema's types.
import type { webhookDeliveries } from './db/schema.ts';

export interface Env {
  DB: D1Database;
  ARTIFACTS: R2Bucket;
  JOBS: Queue<JobNotice>;
  /** The Worker's own queue of looks at leases when they would expire (src/jobs/lease-checks.ts). */
  LEASE_CHECKS: Queue<LeaseCheck>;
  /** The Worker's own queue of webhook attempts (sent: src/jobs/webhooks.ts; consumed: src/features/webhooks/delivery.ts). */
  WEBHOOKS: Queue<WebhookMessage>;
  /** The Worker's own queue of mail asked for by anyone (password resets: src/features/accounts/password-reset.ts). */
  MAIL: Queue<MailRequest>;
  /**
   * Where people open the console (`https://host[:port]`): every link the service mails
   * points there, never at a request's Host. Required wherever links are sent; checked at
   * start (src/features/accounts/mail.ts publicOrigin).
   */
  PUBLIC_ORIGIN?: string;
  /** Key (at least 32 characters) the webhook signing secrets are encrypted under at rest (src/lib/sealing.ts). A secret in deployments. */
  WEBHOOK_ENCRYPTION_KEY?: string;
  /** "true": webhooks may also go to http(s)://127.0.0.1, [::1] and localhost. Local development only. */
  WEBHOOKS_ALLOW_LOOPBACK?: string;
  /** A pending delivery whose attempt has been due this long without being made gets a fresh queue message from the sweep (default 60). */
  WEBHOOK_REQUEUE_AFTER_SECONDS?: string;
  /** Failed deliveries are kept this many days (default 30). */
  WEBHOOK_RETENTION_DAYS?: string;
  /** Delivered deliveries are kept this many days (default 3; never longer than WEBHOOK_RETENTION_DAYS). */
  WEBHOOK_DELIVERED_KEEP_DAYS?: string;
  /** Seconds an ended lease is kept for retried callbacks before the sweep deletes it (src/features/retention/sweep.ts LEASE_KEEP_MS: 3600). */
  LEASE_KEEP_SECONDS?: string;
  /** Finished proofs and executions older than this many days move from D1 to R2 (src/features/retention/archive.ts; default 30). */
  ARCHIVE_AFTER_DAYS?: string;
  /** Seconds a deleted record's purge row outlives its first pass (src/features/retention/purge.ts PURGE_SETTLE_MS: 60; at least 1). */
  PURGE_SETTLE_SECONDS?: string;
  MAX_UPLOAD_BYTES: string;
  /** Headers an API key is read from, comma separated, first found wins (default: Service-API-Key, Axiom-API-Key). */
  API_KEY_HEADERS?: string;
  /** Per-API-key request limits by endpoint class ([[ratelimits]] in wrangler.toml; src/middleware/rate-limit.ts). */
  RATE_LIMIT_READS: RateLimit;
  RATE_LIMIT_SUBMISSIONS: RateLimit;
  RATE_LIMIT_UPLOADS: RateLimit;
  /** The same classes per organization, whichever of its keys sends (src/middleware/rate-limit.ts). */
  RATE_LIMIT_ORG_READS: RateLimit;
  RATE_LIMIT_ORG_SUBMISSIONS: RateLimit;
  RATE_LIMIT_ORG_UPLOADS: RateLimit;
  /** The console API (/console/v1): per session, per organization, and its sends (webhook tests, redeliveries) per organization. */
  RATE_LIMIT_CONSOLE: RateLimit;
  RATE_LIMIT_CONSOLE_ORG: RateLimit;
  RATE_LIMIT_CONSOLE_SENDS: RateLimit;
  /** Password-reset requests per client address (src/features/accounts/console/auth.ts). */
  RATE_LIMIT_PASSWORD_RESET: RateLimit;
  /** The fleet's requests per credential: agent, queue, job and publisher tokens (src/middleware/door.ts). */
  RATE_LIMIT_AGENT: RateLimit;
  RATE_LIMIT_QUEUE: RateLimit;
  RATE_LIMIT_JOB: RateLimit;
  RATE_LIMIT_PUBLISHER: RateLimit;
  /** Requests with no credential per client address: the console's sign-in routes, and pages, documents and downloads. */
  RATE_LIMIT_ANONYMOUS: RateLimit;
  RATE_LIMIT_OPEN: RateLimit;
  /** Refused credentials per client address, whatever the route (src/middleware/door.ts doorGuard). */
  RATE_LIMIT_FAILED: RateLimit;
  /** "true" enables the local emulation of the Queues HTTP pull API. Dev only. */
  DEV_QUEUE_EMULATION?: string;
  DEV_PROOF_SECRET?: string;
  /** Fleet tunables (src/jobs/settings.ts); strings as vars are. */
  LEASE_TTL_SECONDS?: string;
  HEARTBEAT_SECONDS?: string;
  CANCEL_CHECK_SECONDS?: string;
  /** Per-organization quota defaults (src/jobs/quotas.ts). */
  ORG_MAX_ACTIVE_JOBS?: string;
  ORG_MAX_GPUS?: string;
  /** What one tenant or host may hold (src/jobs/settings.ts TENANT_DEFAULTS). */
  LOG_MAX_BYTES?: string;
  LOG_MAX_CHUNKS?: string;
  MAX_STREAMS_PER_KEY?: string;
  MAX_STREAMS_PER_ORG?: string;
  ORG_MAX_API_KEYS?: string;
  MAX_ATTEMPTS?: string;
  /** Longest a lease can be renewed for, from its claim (src/jobs/settings.ts). */
  MAX_LEASE_SECONDS?: string;
  MAX_RETRIES?: string;
  RENOTIFY_AFTER_SECONDS?: string;
  /** Seconds a queued job no online agent can take waits before its `*.unservable` webhook event (src/jobs/waiting.ts). */
  UNSERVABLE_EVENT_SECONDS?: string;
  AGENT_STALE_SECONDS?: string;
  /** JSON: USD per GPU-hour by machine type, "*" as the fallback. */
  MACHINE_RATES?: string;
  /** HMAC key of the Worker-signed key download URLs (src/features/configs/keys.ts). */
  DOWNLOAD_URL_SECRET?: string;
  /** Lifetime of a key download URL, seconds (default 3600). */
  KEY_URL_TTL_SECONDS?: string;
  /** R2's S3-compatible API: when all four are set, key downloads are R2 presigned URLs. */
  R2_S3_ENDPOINT?: string;
  R2_S3_BUCKET?: string;
  R2_S3_ACCESS_KEY_ID?: string;
  R2_S3_SECRET_ACCESS_KEY?: string;
  /** HS256 key of the agents' queue tokens (src/features/fleet/queue-token.ts), at least 32 characters. A secret in deployments. */
  FLEET_TOKEN_SECRET?: string;
  /** The jobs queue's HTTP pull consumer, used by the agents' queue gateway (src/features/fleet/queue.ts). */
  QUEUES_ACCOUNT_ID?: string;
  JOBS_QUEUE_ID?: string;
  /** An API token with Account › Queues › Edit (a secret). */
  QUEUES_API_TOKEN?: string;
  /** Cloudflare's API base (default https://api.cloudflare.com/client/v4). */
  QUEUES_API_URL?: string;
  /** Emulated pull consumer: deliveries before a message is dead-lettered. */
  EMULATED_QUEUE_MAX_RETRIES?: string;
  /** HMAC key of console access tokens (JWT HS256), at least 32 characters. A secret in deployments. */
  CONSOLE_JWT_SECRET?: string;
  /** Lifetime of a console access token, seconds (default 600). */
  CONSOLE_ACCESS_TOKEN_TTL_SECONDS?: string;
  /** How email is sent (src/features/accounts/mail.ts): "outbox" (local only: stored in D1), "http" (a mail API), unset (not sent). */
  MAIL_SENDER?: string;
  /** MAIL_SENDER = "http": the mail API's endpoint, its bearer key (a secret) and the From address. */
  MAIL_API_URL?: string;
  MAIL_API_KEY?: string;
  MAIL_FROM?: string;
}

/** The body of every queue message: a notice that a job may be claimable. D1 holds the truth. */
export interface JobNotice {
  job_id: string;
  kind: string;
}

/** A message on the LEASE_CHECKS queue: look at a lease once it would have expired (src/jobs/lease-checks.ts). */
export interface LeaseCheck {
  type: 'lease-check';
  job_id: string;
  lease_id: string;
}

/**
 * A message on the MAIL queue: a password reset asked for `email` (whether it has an
 * account is decided by the consumer, after the answer: src/features/accounts/password-reset.ts).
 */
export interface MailRequest {
  type: 'password-reset';
  email: string;
}

/** A message on the WEBHOOKS queue: make attempt `attempt` + 1 of a delivery (src/features/webhooks/delivery.ts). */
export interface WebhookMessage {
  type: 'webhook';
  delivery_id: string;
  /** The delivery's `attempts` when the message was sent. */
  attempt: number;
  /**
   * The kind of record to read with the delivery, when its payload is still to render
   * (its first attempt): a hint that saves a round trip; the row decides.
   */
  render?: (typeof webhookDeliveries.$inferSelect)['subject_kind'];
}
