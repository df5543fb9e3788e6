// Bindings and vars of the Worker (wrangler.toml).
export interface Env {
  DB: D1Database;
  ARTIFACTS: R2Bucket;
  JOBS: Queue<JobNotice>;
  MAX_UPLOAD_BYTES: string;
  /** "true" enables the local emulation of the Queues HTTP pull API. Dev only. */
  DEV_QUEUE_EMULATION?: string;
  DEV_PROOF_SECRET?: string;
  /** Fleet tunables (src/jobs/settings.ts); strings as vars are. */
  LEASE_TTL_SECONDS?: string;
  MAX_ATTEMPTS?: string;
  MAX_RETRIES?: string;
  RENOTIFY_AFTER_SECONDS?: string;
  AGENT_STALE_SECONDS?: string;
  /** JSON: USD per GPU-hour by machine type, "*" as the fallback. */
  MACHINE_RATES?: string;
  /** Emulated pull consumer: deliveries before a message is dead-lettered. */
  EMULATED_QUEUE_MAX_RETRIES?: string;
}

/** The body of every queue message: a notice that a job may be claimable. D1 holds the truth. */
export interface JobNotice {
  job_id: string;
  kind: string;
}
