// Bindings and vars of the Worker (wrangler.toml).
export interface Env {
  DB: D1Database;
  ARTIFACTS: R2Bucket;
  JOBS: Queue<JobNotice>;
  MAX_UPLOAD_BYTES: string;
  /** "true" enables the local emulation of the Queues HTTP pull API. Dev only. */
  DEV_QUEUE_EMULATION?: string;
  DEV_PROOF_SECRET?: string;
}

/** The body of every queue message: a notice that a job may be claimable. D1 holds the truth. */
export interface JobNotice {
  job_id: string;
  kind: string;
}
