// What one invocation of each of the Worker's background handlers may spend (README
// "Work per invocation"). The platform allows an invocation 1,000 operations on
// external services such as R2 and D1, and 50 subrequests on Workers Free
// (src/lib/metered.ts cites both); a handler that passes them fails part way. So each
// handler states its budget of calls (every D1 statement or batch, R2 operation, queue
// send, fetch: one call) and of CPU time, meters its bindings with the first
// (src/lib/metered.ts), and cuts its work into units whose most calls are known, taking
// one only while the budget fits it. What a budget leaves is done by the next
// invocation: a cron run a minute later, a queue message retried. A test runs each
// handler against a backlog far past one invocation's work, counting the calls its
// bindings see (test/worker/invocation-budgets.test.ts).
//
// CPU is bounded by the same units: each moves a bounded number of rows and bytes (a
// compaction stage streams at most COMPACT_FAN_IN objects from R2 to R2 without holding
// them; an archive object is at most ARCHIVE_BATCH records; a webhook attempt renders and
// signs one record), so the stated CPU budgets are design bounds, well under the
// platform's (30 s by default on Workers Paid; 10 ms on Workers Free, which this service
// does not fit: its cron alone needs more than 50 calls a minute).
import { COMPACT_STAGE_CALLS } from './logs.ts';

export const INVOCATION_BUDGETS = {
  /**
   * The cron (every minute): one invocation runs every part below, each within its own
   * share, so none can starve another (the shares sum to at most `calls`).
   */
  cron: {
    calls: 800,
    cpuMs: 1_000,
    parts: {
      /** Expired leases, stale lanes, deadlines, unservable lanes, webhook sweep, idempotency keys (src/jobs/sweep.ts). */
      sweep: 250,
      /** Finished logs' compactions, stage by stage (src/jobs/logs.ts compactPendingLogs): three stages. */
      compaction: 3 * COMPACT_STAGE_CALLS + 2,
      /** Garbage result uploads (src/jobs/results.ts sweepResultUploads). */
      uploads: 12,
      /** Retention, purges and ended leases (src/features/retention/sweep.ts). */
      retention: 300,
      /** The archive (src/features/retention/archive.ts): ARCHIVE_OBJECTS_PER_RUN objects of 3 calls, and its plan. */
      archive: 100,
    },
  },
  /** A batch of lease checks (src/jobs/lease-checks.ts): its messages (max_batch_size 40 in wrangler.toml), LEASE_CHECK_CALLS each. */
  leaseChecks: { calls: 400, cpuMs: 200 },
  /** A batch of webhook attempts (src/features/webhooks/delivery.ts; max_batch_size 10), WEBHOOK_MESSAGE_CALLS each. */
  webhooks: { calls: 100, cpuMs: 500 },
  /** A batch of password-reset mail requests (src/features/accounts/password-reset.ts; max_batch_size 10), MAIL_REQUEST_CALLS each. */
  mail: { calls: 30, cpuMs: 100 },
  /** A batch of job notices kept for the local pull API (src/features/fleet/queue-emulation.ts; max_batch_size 100): one insert per 16. */
  queueEmulation: { calls: 10, cpuMs: 50 },
  /** What a lease ending does after its response (src/features/fleet/lease.ts): its log's compaction, two stages. */
  endingCompaction: { calls: 2 * COMPACT_STAGE_CALLS, cpuMs: 200 },
} as const;
